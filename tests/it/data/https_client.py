# An https client independent of earshot (Python's ssl over OpenSSL) for
# tests/it/listen_tls.rs. It verifies the server's chain against CAFILE
# and its name against HOST. One line of output per step:
#   post HOST PORT CAFILE SIGNATURE BODY
#       -> "STATUS ISSUER_CN BODY"
#   post-twice HOST PORT CAFILE SIG1 BODY1 SIG2 BODY2
#       -> "STATUS ISSUER_CN", then (after a line on stdin) the second
#          request on the same connection if it is still open:
#          "STATUS ISSUER_CN same|new"
#   silent HOST PORT CAFILE
#       -> "handshake", then "closed" once the server closes the
#          connection ("open" after 30 s, "data" if it sends bytes)
#   idle HOST PORT CAFILE
#       -> "STATUS" of one GET, then "closed" / "open" / "data" as above
# A chain that does not verify prints "unverified REASON"; any other
# failure "failed ERROR".
import http.client
import socket
import ssl
import sys


def context(cafile):
    return ssl.create_default_context(cafile=cafile)


def issuer(sock):
    for rdn in sock.getpeercert().get("issuer", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return "?"


def connection(host, port, cafile):
    return http.client.HTTPSConnection(host, int(port), context=context(cafile), timeout=30)


def post(conn, signature, body):
    conn.request(
        "POST",
        "/hooks",
        body=body.encode(),
        headers={"content-type": "application/json", "x-svc-signature": signature},
    )
    response = conn.getresponse()
    return response.status, response.read().decode()


def wait_for_close(sock):
    try:
        data = sock.recv(1)
    except socket.timeout:
        return "open"
    except OSError:
        return "closed"
    return "data" if data else "closed"


def main():
    mode, host, port, cafile = sys.argv[1:5]
    rest = sys.argv[5:]
    if mode == "post":
        conn = connection(host, port, cafile)
        status, text = post(conn, rest[0], rest[1])
        print(status, issuer(conn.sock), text)
    elif mode == "post-twice":
        conn = connection(host, port, cafile)
        status, _ = post(conn, rest[0], rest[1])
        first = conn.sock
        print(status, issuer(first), flush=True)
        sys.stdin.readline()
        status, _ = post(conn, rest[2], rest[3])
        print(status, issuer(conn.sock), "same" if conn.sock is first else "new")
    elif mode == "silent":
        raw = socket.create_connection((host, int(port)), timeout=30)
        tls = context(cafile).wrap_socket(raw, server_hostname=host)
        print("handshake", flush=True)
        print(wait_for_close(tls))
    elif mode == "idle":
        conn = connection(host, port, cafile)
        conn.request("GET", "/")
        response = conn.getresponse()
        response.read()
        print(response.status, flush=True)
        print(wait_for_close(conn.sock))
    else:
        raise SystemExit("unknown mode " + mode)


try:
    main()
except ssl.SSLCertVerificationError as error:
    print("unverified", error.verify_message)
except (ssl.SSLError, OSError, http.client.HTTPException) as error:
    print("failed", type(error).__name__, error)
