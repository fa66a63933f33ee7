//! Credentials generated for each run: a CA, a serving certificate for 127.0.0.1,
//! the service-account signing key, an admin token and the admin kubeconfig.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// Files written by [`Pki::generate`].
pub(crate) struct Pki {
    /// Directory holding all the files below.
    pub dir: PathBuf,
    /// CA certificate: trust anchor in the kubeconfig, `--client-ca-file`, `--root-ca-file`.
    pub ca_cert: PathBuf,
    /// CA key, used by kube-controller-manager to sign CSRs.
    pub ca_key: PathBuf,
    /// A second CA, only for `--requestheader-client-ca-file` (the front-proxy CA in kubeadm's
    /// terms). Without it kube-controller-manager and kube-scheduler log errors every few
    /// seconds. Nothing is signed with it.
    pub front_proxy_ca_cert: PathBuf,
    /// Serving certificate (127.0.0.1, localhost, kubernetes.default.svc…) signed by the CA;
    /// used by kube-apiserver, kube-controller-manager and kube-scheduler.
    pub serving_cert: PathBuf,
    /// Key of the serving certificate.
    pub serving_key: PathBuf,
    /// Service-account signing key (ECDSA P-256, PKCS#8 PEM).
    pub sa_key: PathBuf,
    /// Its public key (`--service-account-key-file` does not accept PKCS#8 private keys).
    pub sa_pub: PathBuf,
    /// `--token-auth-file` with one line: the admin token in group system:masters.
    pub token_file: PathBuf,
    /// The admin bearer token.
    pub token: String,
}

impl Pki {
    /// Generates fresh credentials under `dir` (created if missing).
    pub fn generate(dir: &Path) -> Result<Pki> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;

        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name = name("sample-controller-rs test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let ca_key_pem = ca_key.serialize_pem();
        let issuer = Issuer::new(ca_params, ca_key);

        let mut serving_params = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            "kubernetes.default.svc.cluster.local".to_string(),
            // First address of --service-cluster-ip-range (the `kubernetes` Service).
            "10.0.0.1".to_string(),
        ])?;
        serving_params.distinguished_name = name("kube-apiserver");
        serving_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let mut front_proxy_params = CertificateParams::new(Vec::<String>::new())?;
        front_proxy_params.distinguished_name = name("sample-controller-rs front-proxy CA");
        front_proxy_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        front_proxy_params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let front_proxy_ca = front_proxy_params.self_signed(&KeyPair::generate()?)?;

        let serving_key = KeyPair::generate()?;
        let serving_cert = serving_params.signed_by(&serving_key, &issuer)?;

        let sa_key = KeyPair::generate()?;
        let token = random_hex(16)?;

        let pki = Pki {
            dir: dir.to_path_buf(),
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            front_proxy_ca_cert: dir.join("front-proxy-ca.crt"),
            serving_cert: dir.join("serving.crt"),
            serving_key: dir.join("serving.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
            token_file: dir.join("tokens.csv"),
            token,
        };
        write(&pki.ca_cert, &ca_cert.pem())?;
        write(&pki.ca_key, &ca_key_pem)?;
        write(&pki.front_proxy_ca_cert, &front_proxy_ca.pem())?;
        write(&pki.serving_cert, &serving_cert.pem())?;
        write(&pki.serving_key, &serving_key.serialize_pem())?;
        write(&pki.sa_key, &sa_key.serialize_pem())?;
        write(&pki.sa_pub, &sa_key.public_key_pem())?;
        // Format: token,user,uid,"group1,group2"
        write(
            &pki.token_file,
            &format!("{},admin,admin,\"system:masters\"\n", pki.token),
        )?;
        Ok(pki)
    }

    /// Writes an admin kubeconfig for `server` (e.g. `https://127.0.0.1:6443`) to `path`.
    pub fn write_kubeconfig(&self, path: &Path, server: &str) -> Result<()> {
        let kubeconfig = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{
                "name": "sample-controller-rs",
                "cluster": {
                    "server": server,
                    "certificate-authority": self.ca_cert,
                },
            }],
            "users": [{ "name": "admin", "user": { "token": self.token } }],
            "contexts": [{
                "name": "sample-controller-rs",
                "context": {
                    "cluster": "sample-controller-rs",
                    "user": "admin",
                    "namespace": "default",
                },
            }],
            "current-context": "sample-controller-rs",
        });
        write(path, &serde_saphyr::to_string(&kubeconfig)?)
    }
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

/// Writes a file readable only by the current user (it may hold keys or the token).
fn write(path: &Path, contents: &str) -> Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))
}

/// `len` random bytes from the kernel, hex-encoded.
pub(crate) fn random_hex(len: usize) -> Result<String> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random bytes from the OS: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
