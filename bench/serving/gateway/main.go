// Command gateway runs Atelier's inference gateway alone, with one static
// route to one backend, for the gateway benchmark: the same code as in the
// server (internal/serving/gateway) without the rest of the server.
//
//	gateway -listen 127.0.0.1:0 -backend 127.0.0.1:9000 [-service bench] [-concurrency 0] [-cpuprofile f]
//
// The route is /v1/infers/{service}[/…], auth none. SIGTERM or SIGINT stops
// it (and writes the CPU profile).
//
// By default the gateway is served as in the server: its Front (the
// inference loop) takes the connections and passes anything else to
// net/http. With -nethttp it is an http.Handler of net/http only, as before
// the Front existed.
//
// With -reverseproxy it serves net/http/httputil.ReverseProxy instead (a
// tuned keep-alive Transport, every path forwarded as is): the standard
// library's proxy, for reference.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/serving/gateway"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	addrFile := flag.String("addr-file", "", "write the address listened on to this file")
	backend := flag.String("backend", "", "backend address host:port")
	backends := flag.Int("instances", 1, "route this many instances, all to -backend")
	service := flag.String("service", "bench", "service id of the route")
	conc := flag.Int("concurrency", 0, "requests per instance at a time (0: the gateway's default, <0: no limit)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile here on exit")
	reverse := flag.Bool("reverseproxy", false, "serve httputil.ReverseProxy instead of the gateway")
	nethttp := flag.Bool("nethttp", false, "serve the gateway as an http.Handler of net/http only, without the Front's loop")
	flag.Parse()
	if *backend == "" {
		log.Fatal("-backend is required")
	}
	gw := gateway.New(gateway.Options{
		Logger:                 slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registry:               prometheus.NewRegistry(),
		ConcurrencyPerInstance: *conc,
	})
	rt := gateway.Route{ServiceID: *service, Name: *service, Status: api.ServiceRunning, Auth: api.AuthNone}
	for i := range *backends {
		rt.Backends = append(rt.Backends, gateway.Backend{InstanceID: fmt.Sprintf("inst-%d", i), ModelID: "model", Addr: *backend})
	}
	gw.Set(rt)

	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		if err := os.WriteFile(*addrFile, []byte(l.Addr().String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(l.Addr())
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	var h http.Handler = gw
	if *reverse {
		h = reverseProxy(*backend)
	}
	srv := &http.Server{Handler: h, ErrorLog: log.New(os.Stderr, "", 0)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var front *gateway.Front
	if !*reverse && !*nethttp {
		// As the server mounts it: the Front's loop takes the inference
		// requests, net/http what it passes on.
		front = gw.NewFront(l, gateway.FrontOptions{})
		go func() {
			if err := front.Serve(); err != nil {
				log.Fatal(err)
			}
		}()
		l = front.Fallback()
	}
	go func() {
		<-ctx.Done()
		if front != nil {
			front.Close()
		}
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// reverseProxy is the standard library's proxy to addr with a transport
// tuned as the gateway's first version was: keep-alive, HTTP/1.1 only, no
// proxy, no compression, many idle connections.
func reverseProxy(addr string) http.Handler {
	target := &url.URL{Scheme: "http", Host: addr}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.URL.Path = "/" },
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
			TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		},
		ErrorLog: log.New(os.Stderr, "", 0),
	}
}
