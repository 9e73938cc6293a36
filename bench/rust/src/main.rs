//! Spawn-per-request HTTP server: tokio + hyper 1.x, children via tokio::process.
//! GET /echo runs `echo hi`, GET /cat runs `cat $BENCH_CAT_FILE`; the child's
//! stdout is streamed into the response body as it arrives.
use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Body, Bytes, Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpListener;
use tokio::process::{ChildStdout, Command};

/// Response body that forwards a child's stdout chunk by chunk.
struct StdoutBody {
    out: Option<ChildStdout>,
    buf: Box<[u8]>,
}

impl Body for StdoutBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        let Some(out) = this.out.as_mut() else { return Poll::Ready(None) };
        let mut rb = ReadBuf::new(&mut this.buf);
        match Pin::new(out).poll_read(cx, &mut rb) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                this.out = None;
                Poll::Ready(None)
            }
            Poll::Ready(Ok(())) => {
                let chunk = Bytes::copy_from_slice(rb.filled());
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.out.is_none()
    }
}

enum Reply {
    Stream(StdoutBody),
    Text(&'static str),
}

impl Body for Reply {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            Reply::Stream(b) => Pin::new(b).poll_frame(cx),
            Reply::Text(t) if t.is_empty() => Poll::Ready(None),
            Reply::Text(t) => {
                let chunk = Bytes::from_static(t.as_bytes());
                *t = "";
                Poll::Ready(Some(Ok(Frame::data(chunk))))
            }
        }
    }
}

fn text(status: StatusCode, msg: &'static str) -> Response<Reply> {
    let mut res = Response::new(Reply::Text(msg));
    *res.status_mut() = status;
    res
}

async fn handle(req: Request<Incoming>, cat_file: Arc<String>) -> Result<Response<Reply>, Infallible> {
    let mut cmd = match req.uri().path() {
        "/echo" => {
            let mut c = Command::new("echo");
            c.arg("hi");
            c
        }
        "/cat" => {
            let mut c = Command::new("cat");
            c.arg(cat_file.as_str());
            c
        }
        _ => return Ok(text(StatusCode::NOT_FOUND, "not found\n")),
    };
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(_) => return Ok(text(StatusCode::INTERNAL_SERVER_ERROR, "spawn failed\n")),
    };
    let out = child.stdout.take();
    // Reap the child off the request path; tokio's SIGCHLD driver wakes us.
    tokio::spawn(async move {
        let _ = child.wait().await;
    });
    let body = StdoutBody { out, buf: vec![0u8; 64 * 1024].into_boxed_slice() };
    Ok(Response::new(Reply::Stream(body)))
}

fn main() {
    let port: u16 = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("PORT").ok())
        .and_then(|p| p.parse().ok())
        .unwrap_or(8001);
    let cat_file = Arc::new(std::env::var("BENCH_CAT_FILE").unwrap_or_default());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_io().build().expect("runtime");
    rt.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        let bound = listener.local_addr().expect("addr").port();
        println!("listening {bound}");
        let _ = std::io::stdout().flush();
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let _ = stream.set_nodelay(true);
            let cat_file = cat_file.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| handle(req, cat_file.clone()));
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
    });
}
