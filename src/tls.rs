//! TLS for every HTTP client and for the coordinator's own server, with rustls (its `ring`
//! provider): clients trust the system's roots plus an optional CA file (a company's
//! private PKI); the server presents a certificate chain and key from PEM files.
//!
//! A client's failure is described as what it is ([`describe`]): a certificate the client
//! does not accept, a server that does not speak TLS, an `http://` URL at a TLS server,
//! rather than "connection refused".

use std::error::Error as _;
use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// What can be wrong with TLS files or settings.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {message}")]
    File {
        what: &'static str,
        path: String,
        message: String,
    },
    #[error("{what} {path} holds no {expected}")]
    Empty {
        what: &'static str,
        path: String,
        expected: &'static str,
    },
    #[error("the TLS settings are not usable: {0}")]
    Settings(String),
}

/// Make `ring` the process's TLS provider; every client and server built here uses it.
pub fn install_provider() {
    // Already installed (by an earlier call) is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let shown = path.display().to_string();
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::File {
            what,
            path: shown.clone(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            what,
            path: shown,
            expected: "PEM certificate",
        });
    }
    Ok(certs)
}

/// The environment variable naming a CA file (PEM) every client of this program trusts
/// when it is not given one itself.
pub const CA_FILE_ENV: &str = "INTENTDESK_CA_FILE";

/// How long a client of this program keeps a connection it is not using. Servers close idle
/// connections too (the coordinator after `header_read_timeout_ms`, 10 s unless set; many
/// others after 5 s), and a request sent on one just as its server closes it fails with a
/// reset: a console left on an intent for ten seconds had its next command fail so. A
/// client that lets its idle connections go well before the server does (its clock starts
/// when it has read the answer, the server's a little earlier) does not race the close.
/// Connectors name their own (`idle_connection_ms`).
pub const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(4);

/// A client builder that trusts the system's roots and, when given (or named by
/// [`CA_FILE_ENV`]), the certificates of `ca_file` (PEM) as well; its idle connections are
/// let go after [`POOL_IDLE`]. Redirects are answers, never followed: followed, a command
/// (a connector's create, an operator's close, a webhook's receipt) would be sent again,
/// with its key and body, wherever the `Location` points, or turned into a GET whose 200
/// would read as success.
pub fn client(ca_file: Option<&Path>) -> Result<reqwest::ClientBuilder, TlsError> {
    install_provider();
    let mut builder = reqwest::Client::builder()
        .pool_idle_timeout(POOL_IDLE)
        .redirect(reqwest::redirect::Policy::none());
    let from_env = std::env::var_os(CA_FILE_ENV)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    if let Some(path) = ca_file.or(from_env.as_deref()) {
        let roots = certificates("the CA file", path)?
            .into_iter()
            .map(|der| {
                reqwest::Certificate::from_der(&der)
                    .map_err(|e| TlsError::Settings(format!("{}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        builder = builder.tls_certs_merge(roots);
    }
    Ok(builder)
}

/// The coordinator's server side: its certificate chain and private key (PEM files).
pub fn acceptor(cert_file: &Path, key_file: &Path) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    install_provider();
    let chain = certificates("the certificate file", cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| TlsError::File {
        what: "the key file",
        path: key_file.display().to_string(),
        message: e.to_string(),
    })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            TlsError::Settings(format!("the certificate and key do not go together: {e}"))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// What went wrong with a request that got no answer, in an operator's words.
pub fn describe(e: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        chain.push(s.to_string());
        source = s.source();
    }
    let text = chain.join(": ");
    let certificate = chain.iter().any(|s| {
        s.contains("certificate") || s.contains("UnknownIssuer") || s.contains("NotValidForName")
    });
    if certificate {
        return format!(
            "the server's TLS certificate was not accepted ({text}); give the CA that signed it \
             with --ca-file, or check the host name"
        );
    }
    if text.contains("InvalidContentType")
        || text.contains("corrupt message")
        || text.contains("HandshakeFailure")
    {
        return format!(
            "the TLS handshake failed ({text}); does the server speak HTTPS on this port?"
        );
    }
    if e.is_connect() {
        return "connection refused or no route".into();
    }
    if e.is_timeout() {
        return "no answer in time".into();
    }
    if text.contains("invalid HTTP") || text.contains("HTTP/0.9") || text.contains("parse") {
        return format!(
            "the server's answer is not HTTP ({text}); if it serves HTTPS, use an https:// URL"
        );
    }
    format!("the connection broke ({text})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers the first request on each connection and closes the connection
    /// when anything more arrives on it, unanswered: a server that closed an idle connection
    /// as the client sent on it. Counts the connections it accepted.
    async fn one_answer_a_connection() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut request = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => request.extend_from_slice(&buf[..n]),
                        }
                    }
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if stream.write_all(answer).await.is_err() {
                        return;
                    }
                    // Whatever comes next is read and left unanswered: the connection ends.
                    let _ = stream.read(&mut buf).await;
                });
            }
        });
        (url, accepted)
    }

    #[tokio::test]
    async fn a_connection_idle_past_the_pool_limit_is_never_sent_on_again() {
        let (url, accepted) = one_answer_a_connection().await;
        let http = client(None).expect("builder").build().expect("client");
        let first = http.get(&url).send().await.expect("the first request");
        assert_eq!(first.text().await.expect("body"), "ok");
        // The condition under test is the idle time itself.
        tokio::time::sleep(POOL_IDLE + std::time::Duration::from_millis(500)).await;
        let second = http
            .get(&url)
            .send()
            .await
            .expect("a request after the idle limit goes on a fresh connection");
        assert_eq!(second.text().await.expect("body"), "ok");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    }
}
