// Command probe waits until a Jupyter server answers, starts a kernel,
// runs one cell over the kernel's websocket and prints, as JSON, when
// each step was done (Unix seconds): what bench/notebooks/run.sh times.
//
//	probe -login URL            a notebook through Atelier's proxy (a login link)
//	probe -base URL -token T    a bare Jupyter server
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

func main() {
	login := flag.String("login", "", "an Atelier login link")
	base := flag.String("base", "", "a Jupyter base URL, ending in /")
	token := flag.String("token", "", "Jupyter's token (with -base)")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up after this long")
	flag.Parse()
	if err := run(*login, *base, *token, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func run(login, base, token string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	h := http.Header{}
	if login != "" {
		u, err := url.Parse(login)
		if err != nil {
			return err
		}
		res, err := c.Get(login)
		if err != nil {
			return err
		}
		res.Body.Close()
		for _, k := range res.Cookies() {
			if k.Name == "atelier_nb" {
				h.Set("Cookie", k.Name+"="+k.Value)
			}
		}
		if h.Get("Cookie") == "" {
			return fmt.Errorf("login: %s, no cookie", res.Status)
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		base = u.Scheme + "://" + u.Host + "/notebooks/" + parts[1] + "/"
	} else {
		h.Set("Authorization", "token "+token)
	}
	u, _ := url.Parse(base)
	h.Set("Origin", u.Scheme+"://"+u.Host)
	do := func(method, path string, body string) (int, []byte, error) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, b, err
	}
	out := map[string]float64{}
	for {
		st, _, err := do("GET", "api/status", "")
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering after %s (%d %v)", timeout, st, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
	out["ready"] = now()
	st, b, err := do("POST", "api/kernels", "{}")
	if err != nil || st != http.StatusCreated {
		return fmt.Errorf("start kernel: %d %v %s", st, err, b)
	}
	var k struct{ ID string }
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	ws, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"api/kernels/"+k.ID+"/channels?session_id=probe", h)
	if err != nil {
		return fmt.Errorf("kernel channels: %v %v", err, res)
	}
	defer ws.Close()
	msg := map[string]any{"header": map[string]any{"msg_id": "p1", "username": "probe", "session": "probe", "msg_type": "execute_request", "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell", "buffers": []any{},
		"content": map[string]any{"code": "1+1", "silent": false, "store_history": false, "user_expressions": map[string]any{}, "allow_stdin": false}}
	if err := ws.WriteJSON(msg); err != nil {
		return err
	}
	_ = ws.SetReadDeadline(deadline)
	for {
		var m struct {
			Header struct {
				MsgType string `json:"msg_type"`
			} `json:"header"`
			ParentHeader struct {
				MsgID string `json:"msg_id"`
			} `json:"parent_header"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			return fmt.Errorf("kernel answer: %v", err)
		}
		if m.ParentHeader.MsgID == "p1" && m.Header.MsgType == "execute_result" {
			break
		}
	}
	out["kernel"] = now()
	_, _, _ = do("DELETE", "api/kernels/"+k.ID, "")
	return json.NewEncoder(os.Stdout).Encode(out)
}
