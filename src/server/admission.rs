//! Which requests may reach the API at all: this server's own names and pages only, and
//! JSON bodies only (see docs/SERVER.md, Security).

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{App, Failure};

/// Refuses what a web page could send on the user's behalf, before anything else runs:
/// a foreign `Host` (DNS rebinding: a page whose name now resolves to 127.0.0.1), a
/// cross-origin `Origin` (any page the user visits), and POST bodies that are not
/// `application/json` (a form or `text/plain` POST needs no CORS preflight). OpenAI
/// clients and curl send no Origin and pass.
pub(super) async fn admit(State(app): State<App>, req: Request, next: Next) -> Response {
    match check_admission(req.method(), req.uri().path(), req.headers(), app.bound) {
        Ok(()) => next.run(req).await,
        Err(f) => f.into_response(),
    }
}

fn check_admission(
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    bound: SocketAddr,
) -> Result<(), Failure> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let host = header(header::HOST);
    // Bound to every address (--allow-remote, which needs a token): any name may reach it.
    if !bound.ip().is_unspecified() && !host.is_some_and(|h| is_own_authority(h, bound)) {
        return Err(Failure {
            status: StatusCode::MISDIRECTED_REQUEST,
            kind: "invalid_request_error",
            code: Some("unknown_host"),
            message: format!(
                "Host {:?} is not this server: use http://127.0.0.1:{port} or http://localhost:{port}",
                host.unwrap_or(""),
                port = bound.port()
            ),
        });
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let own = origin.strip_prefix("http://").is_some_and(|a| {
            is_own_authority(a, bound) || (bound.ip().is_unspecified() && Some(a) == host)
        });
        if !own && !TAURI_ORIGINS.contains(&origin) {
            return Err(Failure {
                status: StatusCode::FORBIDDEN,
                kind: "permission_error",
                code: Some("cross_origin"),
                message: format!(
                    "requests from pages of other sites are refused (Origin {origin:?}); \
                     use the UI this server serves, or a client that sends no Origin"
                ),
            });
        }
    }
    let api = path.starts_with("/api/") || path.starts_with("/v1/");
    if api && method == Method::POST {
        let media = header(header::CONTENT_TYPE)
            .and_then(|ct| ct.split(';').next())
            .map(|m| m.trim().to_ascii_lowercase());
        if media.as_deref() != Some("application/json") {
            return Err(Failure {
                status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
                kind: "invalid_request_error",
                code: Some("unsupported_media_type"),
                message: format!(
                    "POST bodies must be sent as Content-Type: application/json (got {:?})",
                    media.unwrap_or_default()
                ),
            });
        }
    }
    Ok(())
}

/// The desktop app's own origins (its webview), in case it talks HTTP to a local server.
const TAURI_ORIGINS: &[&str] = &[
    "tauri://localhost",
    "http://tauri.localhost",
    "https://tauri.localhost",
];

/// Whether `authority` (`host[:port]`) names this server: its own address or loopback by
/// name or number, with its port.
fn is_own_authority(authority: &str, bound: SocketAddr) -> bool {
    let (name, port) = match authority.rsplit_once(':') {
        // A bare IPv6 literal in brackets has colons inside: the port follows "]".
        Some((n, p)) if !p.contains(']') => (n, p.parse::<u16>().ok()),
        _ => (authority, None),
    };
    if port.unwrap_or(80) != bound.port() {
        return false;
    }
    let name = name.to_ascii_lowercase();
    let own = match bound.ip() {
        std::net::IpAddr::V4(ip) => ip.to_string(),
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
    };
    matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") || name == own
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn only_this_server_s_own_names_and_pages_get_in() {
        let bound: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        let get = |h: &[(header::HeaderName, &str)]| {
            check_admission(&Method::GET, "/api/kb", &headers(h), bound).map_err(|f| f.status)
        };
        for ok in [
            "127.0.0.1:7878",
            "localhost:7878",
            "LOCALHOST:7878",
            "[::1]:7878",
        ] {
            assert!(get(&[(header::HOST, ok)]).is_ok(), "{ok}");
        }
        for bad in [
            "evil.example:7878",
            "127.0.0.1:9999",
            "localhost",
            "127.0.0.1.evil.example:7878",
            "",
        ] {
            assert_eq!(
                get(&[(header::HOST, bad)]),
                Err(StatusCode::MISDIRECTED_REQUEST),
                "{bad}"
            );
        }
        assert_eq!(get(&[]), Err(StatusCode::MISDIRECTED_REQUEST));
        let host = (header::HOST, "127.0.0.1:7878");
        assert!(get(&[host.clone(), (header::ORIGIN, "http://127.0.0.1:7878")]).is_ok());
        assert!(get(&[host.clone(), (header::ORIGIN, "http://localhost:7878")]).is_ok());
        assert!(get(&[host.clone(), (header::ORIGIN, "tauri://localhost")]).is_ok());
        for bad in [
            "http://evil.example",
            "null",
            "https://127.0.0.1:7878",
            "http://127.0.0.1:1",
        ] {
            assert_eq!(
                get(&[host.clone(), (header::ORIGIN, bad)]),
                Err(StatusCode::FORBIDDEN),
                "{bad}"
            );
        }
        // Bound to all addresses (--allow-remote with a token): any Host, same-origin pages.
        let all: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        let h = headers(&[
            (header::HOST, "box.lan:7878"),
            (header::ORIGIN, "http://box.lan:7878"),
        ]);
        assert!(check_admission(&Method::GET, "/api/kb", &h, all).is_ok());
        let h = headers(&[
            (header::HOST, "box.lan:7878"),
            (header::ORIGIN, "http://evil.example"),
        ]);
        assert!(check_admission(&Method::GET, "/api/kb", &h, all).is_err());
    }

    #[test]
    fn post_bodies_must_be_json() {
        let bound: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        let post = |path: &str, ct: Option<&str>| {
            let mut h = vec![(header::HOST, "127.0.0.1:7878")];
            if let Some(ct) = ct {
                h.push((header::CONTENT_TYPE, ct));
            }
            check_admission(&Method::POST, path, &headers(&h), bound).map_err(|f| f.status)
        };
        assert!(post("/api/ingest", Some("application/json")).is_ok());
        assert!(post(
            "/v1/chat/completions",
            Some("application/json; charset=utf-8")
        )
        .is_ok());
        for ct in [
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data"),
            None,
        ] {
            assert_eq!(
                post("/api/ingest", ct),
                Err(StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{ct:?}"
            );
            assert_eq!(
                post("/v1/chat/completions", ct),
                Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
            );
        }
    }
}
