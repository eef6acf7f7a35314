package sigv4

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestQueryNotMalleable: a signed or presigned request whose query is
// changed into another with the same canonical form but another meaning
// for the handlers (url.ParseQuery) is refused. The swaps: a signed %2B
// (a plus) sent as '+' (a space); a signed %25 sent as a bare '%' that
// does not start an escape, and a signed %3B sent as ';' (url.ParseQuery
// drops those pairs).
func TestQueryNotMalleable(t *testing.T) {
	swaps := []struct{ name, signed, sent string }{
		{"%2B to +", "prefix=a%2Bb&list-type=2", "prefix=a+b&list-type=2"},
		{"%2B to + in a name", "x%2By=1", "x+y=1"},
		{"%25 to a bare %", "prefix=%25zz", "prefix=%zz"},
		{"%3B to ;", "prefix=a%3Bb%3Dc", "prefix=a;b=c"},
	}
	for _, service := range []string{"s3", "atelier"} {
		v := testVerifier(service)
		srv := verifyServer(t, v)
		for _, sw := range swaps {
			// The request as signed is accepted and means what was signed.
			r := clientRequest(t, http.MethodGet, srv.URL+"/b?"+sw.signed, nil)
			SignRequest(r, testCreds(), testRegion, service, EmptyPayloadHash, testTime)
			if code, msg := send(t, srv, r); code != "OK" {
				t.Fatalf("%s %s: the signed request itself: %s %s", service, sw.name, code, msg)
			}
			// Header-signed, then the query swapped.
			r = clientRequest(t, http.MethodGet, srv.URL+"/b?"+sw.signed, nil)
			SignRequest(r, testCreds(), testRegion, service, EmptyPayloadHash, testTime)
			r.URL.RawQuery = sw.sent
			if code, msg := send(t, srv, r); code == "OK" {
				t.Errorf("%s %s (header-signed): the swapped query %q was accepted", service, sw.name, sw.sent)
			} else if code != S3SignatureDoesNotMatch && code != S3InvalidArgument {
				t.Errorf("%s %s (header-signed): %s %s", service, sw.name, code, msg)
			}
			// Presigned, then the query swapped.
			pu, err := Presign(clientRequest(t, http.MethodGet, srv.URL+"/b?"+sw.signed, nil), testCreds(), testRegion, service, testTime.Add(-time.Minute), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if code, msg := send(t, srv, clientRequest(t, http.MethodGet, pu.String(), nil)); code != "OK" {
				t.Fatalf("%s %s: the presigned URL itself: %s %s", service, sw.name, code, msg)
			}
			swapped := *pu
			sent := strings.Split(sw.sent, "&")
			swapped.RawQuery = pu.RawQuery
			for i, pair := range strings.Split(sw.signed, "&") {
				swapped.RawQuery = strings.Replace(swapped.RawQuery, pair, sent[i], 1)
			}
			if swapped.RawQuery == pu.RawQuery {
				t.Fatalf("%s %s: %q is not in the presigned query %q", service, sw.name, sw.signed, pu.RawQuery)
			}
			if code, msg := send(t, srv, clientRequest(t, http.MethodGet, swapped.String(), nil)); code == "OK" {
				t.Errorf("%s %s (presigned): the swapped query was accepted", service, sw.name)
			} else if code != S3SignatureDoesNotMatch && code != S3InvalidArgument {
				t.Errorf("%s %s (presigned): %s %s", service, sw.name, code, msg)
			}
		}
	}
}

// TestQueryMeaningMatchesHandlers: every query Verify accepts means to
// the handlers (url.ParseQuery) what its canonical form says.
func TestQueryMeaningMatchesHandlers(t *testing.T) {
	for _, raw := range []string{"a=1&b=2", "q=a+b", "q=a%20b", "q=%7e&r=%2F", "k", "k=", "a=1&a=2", "x=%E2%82%AC"} {
		if f := checkQuery(raw); f != nil {
			t.Errorf("%q refused: %s", raw, f.msg)
			continue
		}
		vals, _ := url.ParseQuery(raw)
		var back url.Values = map[string][]string{}
		for _, p := range parseRawQuery(canonicalQuery(raw, true, ""), true) {
			back.Add(p.key, p.value)
		}
		if vals.Encode() != back.Encode() {
			t.Errorf("%q: the handlers read %v, the canonical form says %v", raw, vals, back)
		}
	}
	for _, raw := range []string{"a=%zz", "a=1;b=2", "%=1", "a=%4"} {
		if f := checkQuery(raw); f == nil || f.code != CodeQueryAmbiguous || f.s3 != S3InvalidArgument {
			t.Errorf("%q: %+v, want %s", raw, f, CodeQueryAmbiguous)
		}
	}
}
