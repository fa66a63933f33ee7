// The flow view: what a step does, drawn lane by lane from the flow of the
// JSON log it writes with SAMPLE_CONTROLLER_LOG_JSON (course/src/flow/mod.rs
// lists the lanes and fields).
//
// One script for both uses, no dependencies, no build step:
// - live: `cargo xtask watch step-N` serves a page with
//   <div class="flow-view" data-live="/events">; the lines arrive as
//   server-sent events while the step runs;
// - replay: a chapter's `{{#flow NAME}}` becomes
//   <div class="flow-view" data-trace="NAME"> and a <script
//   type="application/json" id="flow-trace-NAME"> holding a recorded run;
//   the view plays it back with its own timing.
(function () {
  "use strict";
  // The view's own words in the Chinese edition (`<html lang="zh-CN">`); the
  // cards keep the recording's words (keys, verbs, log fields) in both.
  const ZH = {
    "Watch events": "watch 事件", "what the informers saw": "informer 看到了什么",
    "Handlers": "处理函数", "which key each change enqueues": "每个变化把哪个键入队",
    "Work queue": "工作队列", "keys waiting, with their backoff": "等待中的键及其退避",
    "Workers": "worker", "the key each worker syncs": "每个 worker 正在同步的键",
    "API requests": "API 请求", "what the syncs and watches sent": "同步和 watch 发出了什么",
    "Events": "Event", "what the controller recorded": "控制器记录了什么",
    "waiting for the first line": "等待第一行", "nothing yet": "还没有", "empty": "空",
    "ready": "就绪", "close": "关闭", "History of ": "历史：",
    "▶ play": "▶ 播放", "⏸ pause": "⏸ 暂停", "⟲ restart": "⟲ 重新开始", "» show all": "» 全部显示",
    "played ": "已播放 ", "playing ": "正在播放 ", "paused at ": "暂停于 ", " of ": " / ", " lines": " 行",
    " (quiet spells shortened)": "（安静的时段已缩短）",
    "disconnected: is cargo xtask watch still running?": "已断开：cargo xtask watch 还在运行吗？",
    "no recording named ": "没有这个名字的录制：",
    // A note a recording carries (course/src/flow/mod.rs SCHEDULER_NOTE; an
    // xtask test fails when the English changes and this does not).
    "The queue is kube-runtime's scheduler (its applier; step 8: the Controller around it), which exposes nothing of itself: a key's add is when it reaches the scheduler, its take when its sync starts; merges, holds and delays in between are inferred from both ends":
      "这里的队列是 kube-runtime 的调度器（它的 applier；第 8 步：外面再包一层 Controller），它不暴露自身的任何状态：键的加入时刻是它到达调度器之时，取出时刻是它的同步开始之时；其间的合并、保留和延迟都是由这两端推断出来的",
  };
  const tr = (text) => (document.documentElement.lang === "zh-CN" && ZH[text]) || text;

  const LANES = [
    ["watch", tr("Watch events"), tr("what the informers saw")],
    ["handler", tr("Handlers"), tr("which key each change enqueues")],
    ["queue", tr("Work queue"), tr("keys waiting, with their backoff")],
    ["worker", tr("Workers"), tr("the key each worker syncs")],
    ["api", tr("API requests"), tr("what the syncs and watches sent")],
    ["event", tr("Events"), tr("what the controller recorded")],
  ];
  const RECENT = 9; // cards kept in a lane of recent things
  const GAP = 3; // a replay skips quiet spells longer than this (seconds)

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function ms(value) {
    return value >= 1000 ? (value / 1000).toFixed(1) + " s" : Math.round(value) + " ms";
  }

  // What a line says, in a few words, and the key it is about.
  function describe(line) {
    const key = line.key || line.object || "";
    switch (line.lane) {
      case "watch":
        if (line.what === "relist") return { text: "relist " + line.resource, key: "" };
        return {
          text: line.what + " " + singular(line.resource) + " " + line.key + " rv " + line.rv,
          key: line.key,
        };
      case "handler":
        if (line.what === "enqueue")
          return { text: singular(line.resource) + " " + line.object + " → enqueue " + line.key, key: line.key };
        return { text: singular(line.resource) + " " + line.object + " ignored: " + line.reason, key: line.object };
      case "queue":
        if (line.what === "requeue")
          return { text: "requeue " + key + " in " + ms(line.delay_ms) + " (failure " + line.requeues + ")", key };
        if (line.what === "take") return { text: "worker " + line.worker + " takes " + key, key };
        return { text: line.what + " " + key, key };
      case "worker":
        if (line.what === "start") return { text: "worker " + line.worker + " starts " + key, key };
        return {
          text: "worker " + line.worker + " " + (line.outcome === "ok" ? "synced " : "failed ") + key +
            " in " + ms(line.ms) + (line.error ? ": " + line.error : ""),
          key,
        };
      case "api": {
        // PUT foos/status default/example-foo → 200
        const resource = [line.resource, line.subresource].filter(Boolean).join("/");
        const object = [line.namespace, line.name].filter(Boolean).join("/");
        const code = line.code === undefined ? "no answer" : line.code;
        const method = line.what === "watch" ? "WATCH" : line.method || line.what;
        return { text: method + " " + resource + " " + object + " → " + code, key: line.key || "" };
      }
      case "event":
        return { text: line.what + " " + line.reason + " on " + key + ": " + line.note, key };
      default:
        return { text: JSON.stringify(line), key: "" };
    }
  }

  function singular(resource) {
    return { foos: "Foo", deployments: "Deployment" }[resource] || resource || "";
  }

  function codeClass(line) {
    if (line.lane === "worker" && line.what === "end") return line.outcome === "ok" ? " flow-good" : " flow-bad";
    if (line.lane !== "api") return "";
    if (line.code === undefined) return " flow-bad";
    if (line.code >= 500) return " flow-bad";
    if (line.code >= 400) return " flow-warn";
    return " flow-good";
  }

  class FlowView {
    constructor(root) {
      this.root = root;
      this.selected = null;
      root.addEventListener("click", (e) => {
        const card = e.target.closest("[data-key]");
        if (card && card.dataset.key) this.select(card.dataset.key);
      });
      this.reset();
    }

    // Empties the view: no lines yet.
    reset() {
      this.lines = [];
      this.clock = 0; // the trace's time now, in seconds
      this.waiting = new Map(); // key → {due, requeues, merges}
      this.workers = new Map(); // worker → {key, since}
      this.outcomes = new Map(); // worker → its last end line
      this.owners = new Map(); // a Deployment's key → its Foo's key
      this.build();
    }

    build() {
      const root = this.root;
      root.textContent = "";
      this.bar = el("div", "flow-bar");
      this.status = el("span", "flow-status", tr("waiting for the first line"));
      this.bar.append(this.status);
      root.append(this.bar);
      const grid = el("div", "flow-lanes");
      this.lanes = {};
      for (const [name, title, hint] of LANES) {
        const lane = el("section", "flow-lane flow-lane-" + name);
        lane.id = this.idFor("lane-" + name);
        lane.dataset.lane = name;
        const head = el("h3", "flow-lane-title", title);
        head.title = hint;
        // What the lane holds now (waiting keys, busy workers), then what
        // happened last, newest first.
        const state = el("div", "flow-lane-state");
        const log = el("div", "flow-lane-log");
        log.append(el("div", "flow-empty", tr("nothing yet")));
        lane.append(head, state, log);
        grid.append(lane);
        this.lanes[name] = { state, log };
      }
      root.append(grid);
      this.history = el("div", "flow-history");
      this.history.hidden = true;
      root.append(this.history);
      this.drawQueue();
    }

    idFor(suffix) {
      const base = this.root.id || "flow";
      return base + "-" + suffix;
    }

    // Adds one line of the trace: the lanes change, the history grows.
    add(line) {
      if (line.lane === "note") {
        // What the step says of its own trace (step 8: where kube hides the queue).
        const note = el("div", "flow-note", tr(line.text));
        note.dataset.what = line.what;
        this.root.insertBefore(note, this.bar.nextSibling);
        return;
      }
      this.lines.push(line);
      this.clock = Math.max(this.clock, line.t || 0);
      if (line.lane === "handler" && line.what === "enqueue" && line.object !== line.key)
        this.owners.set(line.object, line.key);
      const { text, key } = describe(line);
      switch (line.lane) {
        case "queue":
          this.queue(line);
          break;
        case "worker":
          this.worker(line);
          break;
      }
      const card = el("div", "flow-card flow-" + line.lane + "-" + line.what + codeClass(line), text);
      card.dataset.key = this.fooOf(key);
      card.dataset.what = line.what;
      card.title = JSON.stringify(line);
      const lane = this.lanes[line.lane] && this.lanes[line.lane].log;
      if (lane) {
        const empty = lane.querySelector(".flow-empty");
        if (empty) empty.remove();
        lane.prepend(card);
        while (lane.children.length > RECENT) lane.lastChild.remove();
      }
      if (this.selected && this.fooOf(key) === this.selected) this.showHistory();
    }

    fooOf(key) {
      return this.owners.get(key) || key;
    }

    queue(line) {
      const key = line.key;
      const entry = this.waiting.get(key) || { due: this.clock, requeues: 0, merges: 0 };
      if (line.what === "add") {
        entry.due = Math.min(entry.due, this.clock);
        this.waiting.set(key, entry);
      } else if (line.what === "merge") {
        entry.merges += 1;
        this.waiting.set(key, entry);
      } else if (line.what === "requeue") {
        entry.due = this.clock + line.delay_ms / 1000;
        entry.requeues = line.requeues;
        this.waiting.set(key, entry);
      } else if (line.what === "take" || line.what === "drop") {
        const left = this.waiting.get(key);
        this.waiting.delete(key);
        if (line.what === "take") this.workers.set(line.worker, { key, since: this.clock, requeues: left ? left.requeues : 0 });
      }
      this.drawQueue();
    }

    worker(line) {
      if (line.what === "start") {
        const busy = this.workers.get(line.worker) || { key: line.key, since: this.clock, requeues: 0 };
        this.workers.set(line.worker, busy);
      } else if (line.what === "end") {
        this.workers.delete(line.worker);
        this.outcomes.set(line.worker, line);
      }
      this.drawWorkers();
    }

    // The queue lane: a chip per waiting key, then its recent operations.
    drawQueue() {
      this.queueChips = this.lanes.queue.state;
      this.queueChips.textContent = "";
      for (const [key, entry] of this.waiting) {
        const chip = el("div", "flow-chip");
        chip.dataset.key = key;
        const wait = entry.due - this.clock;
        chip.append(el("span", "flow-chip-key", key));
        const note = el("span", "flow-chip-note");
        note.dataset.due = entry.due;
        note.textContent = this.countdown(entry.due);
        chip.append(note);
        if (entry.requeues) chip.append(el("span", "flow-chip-requeues", "retry " + entry.requeues));
        if (entry.merges) chip.append(el("span", "flow-chip-merges", "+" + entry.merges + " merged"));
        if (wait > 0) chip.classList.add("flow-chip-delayed");
        this.queueChips.append(chip);
      }
      if (!this.waiting.size) this.queueChips.append(el("div", "flow-empty", tr("empty")));
    }

    countdown(due) {
      const wait = due - this.clock;
      return wait > 0 ? "in " + ms(wait * 1000) : tr("ready");
    }

    drawWorkers() {
      const boxes = this.lanes.worker.state;
      boxes.textContent = "";
      const seen = new Set([...this.workers.keys(), ...this.outcomes.keys()]);
      const numbers = [...seen].sort((a, b) => a - b);
      for (const n of numbers) {
        const box = el("div", "flow-worker");
        box.id = this.idFor("worker-" + n);
        box.append(el("span", "flow-worker-name", "worker " + n));
        const busy = this.workers.get(n);
        if (busy) {
          box.classList.add("flow-worker-busy");
          box.dataset.key = busy.key;
          box.append(el("span", "flow-worker-key", busy.key));
        } else {
          const last = this.outcomes.get(n);
          box.append(el("span", "flow-worker-idle", "idle, last: " + last.key + " " + last.outcome));
          box.dataset.key = last.key;
        }
        boxes.append(box);
      }
    }

    // Ticks the countdowns between lines.
    tick(now) {
      if (this.clock < now) this.clock = now;
      if (this.queueChips)
        for (const note of this.queueChips.querySelectorAll(".flow-chip-note"))
          note.textContent = this.countdown(Number(note.dataset.due));
    }

    select(key) {
      this.selected = key;
      this.showHistory();
    }

    // Everything the trace says about one Foo: its own lines, its Deployment's,
    // and the requests its syncs made.
    showHistory() {
      const key = this.selected;
      const box = this.history;
      box.hidden = false;
      box.textContent = "";
      const head = el("div", "flow-history-head");
      head.append(el("strong", "", tr("History of ") + key));
      const close = el("button", "flow-button", tr("close"));
      close.addEventListener("click", (e) => {
        e.stopPropagation();
        this.selected = null;
        box.hidden = true;
      });
      head.append(close);
      box.append(head);
      const list = el("ol", "flow-history-list");
      for (const line of this.lines) {
        const about = describe(line).key;
        if (this.fooOf(about) !== key) continue;
        const item = el("li", "flow-history-item flow-history-" + line.lane);
        item.append(el("span", "flow-history-time", (line.t || 0).toFixed(3) + " s"));
        item.append(el("span", "flow-history-lane", line.lane));
        item.append(el("span", "", describe(line).text));
        list.append(item);
      }
      box.append(list);
    }
  }

  // Live: lines as server-sent events, one JSON line per message.
  function live(root, url) {
    const view = new FlowView(root);
    let last = null; // [trace time, page time] of the latest line
    const source = new EventSource(url);
    source.onmessage = (message) => {
      const line = JSON.parse(message.data);
      view.add(line);
      last = [line.t || 0, performance.now()];
      view.status.textContent = "live: " + view.lines.length + " lines, t = " + (line.t || 0).toFixed(1) + " s";
    };
    source.onerror = () => {
      view.status.textContent = tr("disconnected: is cargo xtask watch still running?");
    };
    setInterval(() => {
      if (last) view.tick(last[0] + (performance.now() - last[1]) / 1000);
    }, 100);
  }

  // Replay: the recorded lines, played with their own timing (quiet spells
  // longer than GAP seconds shortened to one second, and said).
  function replay(root, lines) {
    const view = new FlowView(root);
    const controls = el("span", "flow-controls");
    const play = el("button", "flow-button", tr("▶ play"));
    const restart = el("button", "flow-button", tr("⟲ restart"));
    const speed = el("select", "flow-speed");
    for (const s of [0.25, 0.5, 1, 2, 5]) {
      const option = el("option", "", s + "×");
      option.value = s;
      if (s === 1) option.selected = true;
      speed.append(option);
    }
    const all = el("button", "flow-button", tr("» show all"));
    controls.append(play, restart, speed, all);
    view.bar.prepend(controls);

    // The time each line is shown at, gaps shortened.
    const shown = [];
    let skipped = 0;
    for (let i = 0; i < lines.length; i++) {
      const t = lines[i].t || 0;
      const before = i ? lines[i - 1].t || 0 : t;
      if (t - before > GAP) skipped += t - before - 1;
      shown.push(t - skipped);
    }
    let next = 0;
    let at = shown.length ? shown[0] : 0; // replay clock, in shown time
    let running = false;
    let lastFrame = 0;

    function status() {
      const total = lines.length;
      view.status.textContent =
        tr(next >= total ? "played " : running ? "playing " : "paused at ") + next + tr(" of ") + total + tr(" lines") +
        (skipped > 0 ? tr(" (quiet spells shortened)") : "");
      // Where the replay is, in numbers (the book check reads them).
      view.status.dataset.played = next;
      view.status.dataset.total = total;
    }
    function frame(now) {
      if (!running) return;
      const dt = lastFrame ? (now - lastFrame) / 1000 : 0;
      lastFrame = now;
      at += dt * Number(speed.value);
      while (next < lines.length && shown[next] <= at) view.add(lines[next++]);
      // The queue's countdowns follow the trace's own clock.
      const offset = next ? (lines[next - 1].t || 0) - shown[next - 1] : 0;
      view.tick(at + offset);
      status();
      if (next >= lines.length) {
        running = false;
        play.textContent = tr("▶ play");
        status();
        return;
      }
      requestAnimationFrame(frame);
    }
    function start() {
      running = true;
      lastFrame = 0;
      play.textContent = tr("⏸ pause");
      requestAnimationFrame(frame);
    }
    play.addEventListener("click", () => {
      if (running) {
        running = false;
        play.textContent = tr("▶ play");
        status();
      } else {
        if (next >= lines.length) reset();
        start();
      }
    });
    function reset() {
      running = false;
      view.reset();
      view.bar.prepend(controls);
      next = 0;
      at = shown.length ? shown[0] : 0;
      play.textContent = tr("▶ play");
      status();
    }
    restart.addEventListener("click", () => {
      reset();
      start();
    });
    all.addEventListener("click", () => {
      running = false;
      play.textContent = tr("▶ play");
      while (next < lines.length) view.add(lines[next++]);
      at = shown.length ? shown[shown.length - 1] : 0;
      view.tick(lines.length ? lines[lines.length - 1].t || 0 : 0);
      status();
    });
    // A page shows the end state until a reader presses play: a printed or
    // unscripted reader still sees what happened.
    all.click();
  }

  function mount(root) {
    if (root.dataset.live) return live(root, root.dataset.live);
    const data = document.getElementById("flow-trace-" + root.dataset.trace);
    if (!data) {
      root.textContent = tr("no recording named ") + root.dataset.trace;
      return;
    }
    const lines = data.textContent
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    replay(root, lines);
  }

  function mountAll() {
    for (const root of document.querySelectorAll(".flow-view")) mount(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
