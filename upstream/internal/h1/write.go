package h1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// defaultUserAgent is the User-Agent Request.Write sends when the header
// has none.
const defaultUserAgent = "Go-http-client/1.1"

// writeRequest writes req on w, byte for byte as req.Write writes it,
// and closes its body. The requests sent here most — a body of known
// length held in memory, or none; a plain Host; no trailer —
// are written out directly: Request.Write formats each line with fmt,
// sorts a copy of the header and goes through a transfer writer, 2–3 µs
// of an echo call's CPU in the c16 profile (BenchmarkWriteRequest).
// Anything else is req.Write's (FuzzWriteRequestIsRequestWrite). req is
// sendable.
func writeRequest(w *bufio.Writer, req *http.Request) error {
	host, uri, ok := plainRequest(req)
	if !ok {
		return req.Write(w)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	agent := defaultUserAgent
	if vv, ok := req.Header["User-Agent"]; ok {
		agent = ""
		if len(vv) > 0 {
			agent = textproto.TrimString(vv[0])
		}
	}
	if agent != "" {
		writeField(w, "User-Agent", agent)
	}
	// As net/http: an empty body's length is sent with the methods
	// servers expect a body with.
	if req.ContentLength > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(w.AvailableBuffer(), req.ContentLength, 10))
		w.WriteString("\r\n")
	}
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			writeField(w, k, textproto.TrimString(v))
		}
	}
	w.WriteString("\r\n")
	return writeBody(w, req)
}

// plainRequest returns the Host line and request URI of req when it is
// one writeRequest writes itself: no trace to report to, no trailer, no
// transfer coding, no Connection: close to add, a body of known length
// held in memory (one GetBody can give again) or none, and a Host (the
// request's, or its URL's) in letters, digits and the punctuation of a
// host and port, which Request.Write would send as it is.
func plainRequest(req *http.Request) (host, uri string, ok bool) {
	if httptrace.ContextClientTrace(req.Context()) != nil || req.Trailer != nil ||
		len(req.TransferEncoding) > 0 || req.Close {
		return "", "", false
	}
	noBody := req.Body == nil || req.Body == http.NoBody
	if !(noBody && req.ContentLength == 0 || !noBody && req.ContentLength > 0 && req.GetBody != nil) {
		return "", "", false
	}
	if host = req.Host; host == "" {
		host = req.URL.Host
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return "", "", false
		}
	}
	if !httpguts.ValidHostHeader(host) {
		return "", "", false
	}
	uri = req.URL.RequestURI()
	if strings.ContainsFunc(uri, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return "", "", false
	}
	return host, uri, true
}

func writeField(w *bufio.Writer, name, value string) {
	w.WriteString(name)
	w.WriteString(": ")
	w.WriteString(value)
	w.WriteString("\r\n")
}

// writeBody writes the body of req, ContentLength bytes of it, and
// closes it, as Request.Write does: a body of another length is an
// error.
func writeBody(w *bufio.Writer, req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	n, err := io.Copy(w, io.LimitReader(req.Body, req.ContentLength))
	if err == nil {
		var extra int64
		extra, err = io.Copy(io.Discard, req.Body)
		n += extra
	}
	if closeErr := req.Body.Close(); err == nil {
		err = closeErr
	}
	if err == nil && n != req.ContentLength {
		err = fmt.Errorf("http: ContentLength=%d with Body length %d", req.ContentLength, n)
	}
	return err
}
