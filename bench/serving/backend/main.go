// Command backend is the trivial inference backend of the gateway
// benchmark: an HTTP/1.1 server that reads the request body and answers a
// small JSON document, like a handler that returns a label and scores.
//
//	backend -listen 127.0.0.1:0 -addr-file /tmp/backend.addr
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

var answer = []byte(`{"predicted_label":"cat","scores":[["cat",0.91],["dog",0.09]]}` + "\n")

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	addrFile := flag.String("addr-file", "", "write the address listened on to this file")
	flag.Parse()
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
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header()["Content-Type"] = []string{"application/json"}
		w.Write(answer)
	})
	log.Fatal(http.Serve(l, h))
}
