package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/sandbox/relay"
)

const (
	// closeWait is how long the second side of a websocket may take to
	// answer a close (or end) after the first side ended.
	closeWait = 5 * time.Second
	// writeWait bounds the writing of a close frame.
	writeWait = 5 * time.Second
	// headSize is how much of a client message is kept to look for
	// activity: a Jupyter message's header comes first.
	headSize = 16 << 10
)

// channelKind is the activity a websocket at rest (the path after
// /notebooks/{id}) may carry: a kernel's channels, a terminal, or none.
func channelKind(rest string) string {
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case len(parts) == 4 && parts[0] == "api" && parts[1] == "kernels" && parts[3] == "channels":
		return ActivityExecute
	case len(parts) == 3 && parts[0] == "terminals" && parts[1] == "websocket":
		return ActivityTerminal
	}
	return ""
}

// websocket relays a websocket between the browser and Jupyter: it
// dials Jupyter first (so the browser gets Jupyter's refusal as a status
// and the subprotocol Jupyter chose), then upgrades the browser's side.
func (p *Proxy) websocket(w http.ResponseWriter, r *http.Request, id, rest string, t Target, still func(context.Context) error) {
	const op errs.Op = "proxy.Websocket"
	h := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		h[k] = append([]string(nil), vs...)
	}
	removeHopByHop(h)
	for _, k := range []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions"} {
		delete(h, k)
	}
	upstreamHeader(h, t.Token)
	h.Set("Host", r.Host)
	d := websocket.Dialer{
		NetDialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return relay.DialUnix(ctx, &dialer, t.Socket)
		},
		HandshakeTimeout: 10 * time.Second,
	}
	u := "ws://jupyter" + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		u += "?" + r.URL.RawQuery
	}
	up, res, err := d.DialContext(r.Context(), u, h)
	if err != nil {
		if res != nil && errors.Is(err, websocket.ErrBadHandshake) {
			status := res.StatusCode
			if status < 400 {
				status = http.StatusBadGateway // an answer that is neither an upgrade nor a refusal
			}
			failStatus(w, status, errs.E(op, CodeWebsocketRefused,
				fmt.Sprintf("Jupyter of notebook %s refused the websocket: %s", id, res.Status)))
			return
		}
		p.o.Logger.Warn("notebook proxy: cannot open Jupyter's websocket", "notebook", id, "path", r.URL.Path, "err", err)
		failStatus(w, http.StatusBadGateway, unreachable(id, err))
		return
	}
	var rh http.Header
	if sp := up.Subprotocol(); sp != "" {
		rh = http.Header{"Sec-Websocket-Protocol": {sp}}
	}
	client, err := p.upgrader.Upgrade(w, r, rh) // answers the browser itself on failure
	if err != nil {
		up.Close()
		return
	}
	var inspect func([]byte)
	if kind := channelKind(rest); kind != "" && p.o.Activity != nil {
		inspect = func(head []byte) {
			if active(kind, head) {
				p.o.Activity.Note(id, kind, p.now())
			}
		}
	}
	p.pipe(r.Context(), client, up, inspect, still)
}

// removeHopByHop drops the hop-by-hop fields of h, those its Connection
// names included.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		h.Del(k)
	}
}

// pipe relays messages between client and up until either ends, then
// passes the close on and closes both. inspect, if any, sees the head of
// each text message from the client, after it was relayed. Every
// Options.Recheck, still (if any) says whether the client may still use
// the notebook: when it may not (signed out, no longer the owner, the
// notebook stopped) the client gets close code 1008 with the reason, and
// both sides are closed.
func (p *Proxy) pipe(ctx context.Context, client, up *websocket.Conn, inspect func([]byte), still func(context.Context) error) {
	for _, c := range []*websocket.Conn{client, up} {
		c.SetReadLimit(p.o.MaxMessage)
		// A close is not answered here but passed to the other side, whose
		// answer comes back as the reply.
		c.SetCloseHandler(func(int, string) error { return nil })
	}
	done := make(chan struct{}, 2)
	go func() { relayMessages(up, client, inspect); done <- struct{}{} }()
	go func() { relayMessages(client, up, nil); done <- struct{}{} }()
	var recheck <-chan time.Time
	if still != nil {
		tick := time.NewTicker(p.o.Recheck)
		defer tick.Stop()
		recheck = tick.C
	}
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-recheck:
			cctx, cancel := context.WithTimeout(ctx, writeWait)
			err := still(cctx)
			cancel()
			if err == nil {
				continue
			}
			reason := errs.UserMessage(err)
			if c := errs.CodeOf(err); c != "" {
				reason = string(c) + ": " + reason
			}
			deadline := time.Now().Add(writeWait)
			client.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, clipReason(reason)), deadline)
			up.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), deadline)
			client.Close()
			up.Close()
			<-done
			<-done
			return
		}
	}
	ended := 1
	t := time.NewTimer(closeWait)
	select {
	case <-done:
		ended++
	case <-t.C:
	}
	t.Stop()
	client.Close()
	up.Close()
	if ended < 2 {
		<-done
	}
}

// relayMessages copies messages from src to dst, keeping their type,
// until src ends (then dst is sent its close code) or dst fails. A message
// is streamed, never held whole.
func relayMessages(dst, src *websocket.Conn, inspect func([]byte)) {
	var head headBuffer
	for {
		typ, r, err := src.NextReader()
		if err != nil {
			dst.WriteControl(websocket.CloseMessage, closeFrame(err), time.Now().Add(writeWait))
			return
		}
		w, err := dst.NextWriter(typ)
		if err != nil {
			return
		}
		er := &errReader{r: r}
		var from io.Reader = er
		look := inspect != nil && typ == websocket.TextMessage
		if look {
			head.b = head.b[:0]
			from = io.TeeReader(er, &head)
		}
		if _, err := io.Copy(w, from); err != nil {
			if er.err != nil {
				dst.WriteControl(websocket.CloseMessage, closeFrame(er.err), time.Now().Add(writeWait))
			}
			return
		}
		if err := w.Close(); err != nil {
			return
		}
		if look {
			inspect(head.b)
		}
	}
}

// closeFrame is the close frame that passes on how a side ended.
func closeFrame(err error) []byte {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		switch ce.Code {
		case websocket.CloseNoStatusReceived:
			return []byte{}
		case websocket.CloseAbnormalClosure, websocket.CloseTLSHandshake:
			return websocket.FormatCloseMessage(websocket.CloseGoingAway, "")
		}
		return websocket.FormatCloseMessage(ce.Code, ce.Text)
	case errors.Is(err, websocket.ErrReadLimit):
		return websocket.FormatCloseMessage(websocket.CloseMessageTooBig, "")
	}
	return websocket.FormatCloseMessage(websocket.CloseGoingAway, "")
}

// errReader remembers the error of its reader other than io.EOF.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}

// headBuffer keeps the first headSize bytes written to it.
type headBuffer struct{ b []byte }

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := headSize - len(h.b); room > 0 {
		h.b = append(h.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// clipReason keeps a close reason within the 123 bytes a close frame
// allows, cut at a rune.
func clipReason(s string) string {
	if len(s) <= 123 {
		return s
	}
	i := 123
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}
