package app

import (
	"bytes"
	"encoding/xml"
	"net/http"
)

// s3Placeholder answers on --s3-listen until the S3 API is wired in: every
// request gets an S3-style XML error, so clients see a clear reason rather
// than a refused connection, and the port is held from the first start.
func s3Placeholder() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res bytes.Buffer
		xml.EscapeText(&res, []byte(r.URL.Path))
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotImplemented)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
			`<Error><Code>NotImplemented</Code><Message>The S3 API is not available in this build of Atelier.</Message><Resource>` +
			res.String() + `</Resource></Error>`))
	})
}
