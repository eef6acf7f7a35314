package relay

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/atelier-dev/atelier/internal/errs"
)

// Dialer makes the outbound connection of one relayed connection.
type Dialer func(ctx context.Context) (net.Conn, error)

// DialURL dials the host of an http:// or https:// URL (TLS for https,
// verified against its host name): how a relay reaches OBS.
func DialURL(raw string) (Dialer, error) {
	const op errs.Op = "relay.DialURL"
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errs.E(op, errs.Invalid, CodeSocket, "the endpoint "+raw+" is not an http(s) URL")
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if u.Scheme == "http" {
		return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", host) }, nil
	}
	td := &tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}}
	return func(ctx context.Context) (net.Conn, error) { return td.DialContext(ctx, "tcp", host) }, nil
}

// Serve relays every connection accepted on ln to a connection dial makes,
// until ctx ends (ln is closed then, and the open relays cut).
func Serve(ctx context.Context, ln net.Listener, dial Dialer, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				log.Warn("relay: accept failed", "addr", ln.Addr().String(), "err", err)
			}
			return
		}
		mu.Lock()
		open[c] = struct{}{}
		mu.Unlock()
		go func() {
			defer func() {
				mu.Lock()
				delete(open, c)
				mu.Unlock()
			}()
			out, err := dial(ctx)
			if err != nil {
				log.Warn("relay: cannot reach the endpoint", "err", err)
				c.Close()
				return
			}
			Pipe(c, out)
		}()
	}
}

// Pipe copies between a and b until both directions end, half-closing
// each writer when its reader ends, then closes both.
func Pipe(a, b net.Conn) {
	defer a.Close()
	defer b.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	_, _ = io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}
