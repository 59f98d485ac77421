//! HTTPS end to end, with a CA and certificates made by the test: the coordinator serves
//! TLS itself, the console's client reaches it when given the CA and says what is wrong
//! when it is not, and a connector orders over HTTPS from a downstream behind a TLS front.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::deploy::{Coordinator, Setup, Token, sandbox};
use intentdesk::client::{Client, ClientError};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

const ADMIN: &str = "tls-admin-secret";
const APPROVER: &str = "tls-approver-secret";
const PATIENCE: Duration = Duration::from_secs(15);

/// A CA, and a certificate it signed for `localhost` and 127.0.0.1, as PEM files in `dir`.
struct Pki {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    /// A CA nobody used, for the wrong-CA case.
    stranger: PathBuf,
}

fn ca(name: &str) -> (rcgen::CertificateParams, rcgen::KeyPair, String) {
    let key = rcgen::KeyPair::generate().expect("a CA key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("a CA certificate");
    (params, key, cert.pem())
}

fn pki(dir: &Path) -> Pki {
    let (ca_params, ca_key, ca_pem) = ca("intentdesk test CA");
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("a server key");
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("server params");
    params.subject_alt_names.push(rcgen::SanType::IpAddress(
        "127.0.0.1".parse().expect("an IP"),
    ));
    let cert = params
        .signed_by(&key, &issuer)
        .expect("a server certificate");
    let (_, _, stranger_pem) = ca("someone else's CA");
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write a PEM file");
        path
    };
    Pki {
        ca: write("ca.pem", &ca_pem),
        cert: write("server.crt", &cert.pem()),
        key: write("server.key", &key.serialize_pem()),
        stranger: write("stranger.pem", &stranger_pem),
    }
}

fn tls_table(pki: &Pki) -> String {
    format!(
        "[tls]\ncert_file = '{}'\nkey_file = '{}'\nca_file = '{}'\n",
        pki.cert.display(),
        pki.key.display(),
        pki.ca.display()
    )
}

async fn until_answered(client: &Client) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match client.whoami().await {
            Ok(_) => return,
            Err(e) => assert!(Instant::now() < deadline, "never answered: {e}"),
        }
        tokio::task::yield_now().await;
    }
}

fn unreachable_detail(result: Result<impl std::fmt::Debug, ClientError>) -> String {
    match result {
        Err(ClientError::Unreachable { detail, .. }) => detail,
        other => panic!("expected the coordinator unreachable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_reaches_an_https_coordinator_and_says_what_is_wrong_when_it_cannot() {
    let dir = tempfile::tempdir().expect("dir");
    let pki = pki(dir.path());
    let downstream = sandbox("none", None, Some(1)).await;
    let mut setup = Setup::new(
        dir.path(),
        &downstream.url,
        vec![Token::all_tenants("admin", ADMIN)],
    );
    setup.tables = tls_table(&pki);
    let coordinator = Coordinator::start(&setup).await;
    let https = format!("https://localhost:{}", coordinator.addr.port());

    let trusted = Client::with_ca(&https, ADMIN, Some(&pki.ca)).expect("client");
    until_answered(&trusted).await;
    let me = trusted.whoami().await.expect("whoami over HTTPS");
    assert_eq!(me.name, "admin");
    // By IP as well: the certificate names 127.0.0.1.
    let by_ip = format!("https://127.0.0.1:{}", coordinator.addr.port());
    let by_ip = Client::with_ca(&by_ip, ADMIN, Some(&pki.ca)).expect("client");
    by_ip.whoami().await.expect("whoami by IP");

    // Without the CA, or with another one: the certificate is named as the problem.
    for ca in [None, Some(pki.stranger.as_path())] {
        let client = Client::with_ca(&https, ADMIN, ca).expect("client");
        let detail = unreachable_detail(client.whoami().await);
        assert!(detail.contains("certificate"), "{detail}");
        assert!(!detail.contains("connection refused"), "{detail}");
    }
    // Plain HTTP at the TLS port: told to use https://.
    let plain = format!("http://127.0.0.1:{}", coordinator.addr.port());
    let client = Client::new(&plain, ADMIN).expect("client");
    let detail = unreachable_detail(client.whoami().await);
    assert!(
        detail.contains("https://") || detail.contains("HTTPS"),
        "{detail}"
    );
    // HTTPS at a plain HTTP server: the handshake is named.
    let sandbox_https = downstream.url.replace("http://", "https://");
    let client = Client::with_ca(&sandbox_https, ADMIN, Some(&pki.ca)).expect("client");
    let detail = unreachable_detail(client.whoami().await);
    assert!(
        detail.contains("TLS") || detail.contains("HTTPS"),
        "{detail}"
    );
    // A CA file that is not one is refused when the client is made, with its path.
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello").expect("write");
    let refused = Client::with_ca(&https, ADMIN, Some(&not_pem)).map(|_| ());
    let detail = unreachable_detail(refused);
    assert!(detail.contains("not.pem"), "{detail}");
    coordinator.shut_down().await.expect("clean stop");
}

/// A TLS front for `backend`: what a company's load balancer in front of its ERP does.
async fn tls_front(pki: &Pki, backend: SocketAddr) -> SocketAddr {
    let acceptor = intentdesk::tls::acceptor(&pki.cert, &pki.key).expect("acceptor");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let acceptor = Arc::new(acceptor);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut front) = acceptor.accept(stream).await else {
                    return;
                };
                let Ok(mut back) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut front, &mut back).await;
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connector_orders_over_https_from_a_downstream_signed_by_the_configured_ca() {
    let dir = tempfile::tempdir().expect("dir");
    let pki = pki(dir.path());
    let downstream = sandbox("none", None, Some(1)).await;
    let front = tls_front(&pki, downstream.addr).await;
    let mut setup = Setup::new(
        dir.path(),
        &format!("https://localhost:{}", front.port()),
        vec![
            Token::all_tenants("admin", ADMIN),
            Token::all_tenants("approver", APPROVER),
        ],
    );
    // The coordinator itself serves plain HTTP here; it trusts the CA for its connectors.
    setup.tables = format!("[tls]\nca_file = '{}'\n", pki.ca.display());
    let coordinator = Coordinator::start(&setup).await;
    let http = intentdesk::tls::client(None)
        .expect("a TLS client")
        .no_proxy()
        .build()
        .expect("client");
    let base = coordinator.base.clone();
    let post_as = |token: &'static str, path: String, key: Option<&'static str>, body: Value| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let mut request = http
                .post(format!("{base}{path}"))
                .bearer_auth(token)
                .json(&body);
            if let Some(key) = key {
                request = request.header("idempotency-key", key);
            }
            let response = request.send().await.expect("answered");
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.expect("JSON"))
        }
    };
    let order = json!({
        "tenant": "acme", "actor": "agent", "purpose": "restock",
        "operation": "purchase_order.create", "tool": "erp.po", "consequence": "write",
        "args": {"item": "paper", "qty": 5}, "deadline_secs": 600, "max_attempts": 3,
        "release_id": "r1", "locale": "en-US", "connector": "erp"
    });
    let post =
        |path: String, key: Option<&'static str>, body: Value| post_as(ADMIN, path, key, body);
    let (status, intent) = post("/v1/intents".into(), Some("tls-order-1"), order).await;
    assert_eq!(status, 201, "{intent}");
    let id = intent["id"].as_str().expect("id").to_string();
    let (status, _) = post_as(
        APPROVER,
        format!("/v1/intents/{id}/authorize"),
        None,
        json!({"authorization_version": "v1"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(format!("/v1/intents/{id}/dispatch"), None, json!({})).await;
    assert_eq!(status, 202);
    let deadline = Instant::now() + PATIENCE;
    let detail = loop {
        let detail: Value = http
            .get(format!("{base}/v1/intents/{id}"))
            .bearer_auth(ADMIN)
            .send()
            .await
            .expect("answered")
            .json()
            .await
            .expect("JSON");
        if detail["intent"]["state"] == "committed" {
            break detail;
        }
        assert!(
            Instant::now() < deadline,
            "never committed over HTTPS: {detail}"
        );
        tokio::task::yield_now().await;
    };
    let key = detail["intent"]["action_key"].as_str().expect("key");
    assert_eq!(
        downstream.state.effects_for(&key.parse().expect("key")),
        1,
        "one effect, made over HTTPS"
    );
    coordinator.shut_down().await.expect("clean stop");
}
