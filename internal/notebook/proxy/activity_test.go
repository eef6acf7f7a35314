package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKernelMsgType(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`{"header":{"msg_type":"execute_request"}}`, "execute_request"},
		{`{"msg_type":"execute_request"}`, "execute_request"},
		{`{"header":{"msg_id":"1","msg_type":"kernel_info_request"},"msg_type":"execute_request"}`, "kernel_info_request"},
		{`{"msg_type":"execute_request","header":{"msg_type":"comm_msg"}}`, "comm_msg"},
		{`{"header":{"msg_type":7},"msg_type":"execute_request"}`, "execute_request"},
		{`{"header":"x","msg_type":"execute_request"}`, "execute_request"},
		{`{"header":[1,{"msg_type":"a"}],"msg_type":"b"}`, "b"},
		{`{"header":{"msg_type":"a"},"header":{}}`, ""},
		{`{"header":{"msg_type":"a","msg_type":null}}`, ""},
		{`{"header":{"msg_type":"execute\u005frequest"}}`, "execute_request"},
		{`{"Header":{"MSG_TYPE":"execute_request"}}`, ""},
		{`{"content":{"header":{"msg_type":"execute_request"}}}`, ""},
		{` { "header" : { "msg_type" : "execute_request" } } `, "execute_request"},
		// Heads of long messages.
		{`{"header":{"msg_type":"execute_request"},"content":{"code":"1+1+1+`, "execute_request"},
		{`{"header":{"msg_type":"execute_request","session":"ab`, "execute_request"},
		{`{"header":{"msg_type":"execute_req`, ""},
		{`["stdin","x"]`, ""},
		{`"execute_request"`, ""},
		{``, ""},
		{`{`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := kernelMsgType([]byte(tt.msg)); got != tt.want {
			t.Errorf("kernelMsgType(%s) = %q, want %q", tt.msg, got, tt.want)
		}
	}
}

func TestTerminalStdin(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{`["stdin","ls\r"]`, true},
		{` [ "stdin" , "` + strings.Repeat("x", 100) + ``, true},
		{`["stdin"]`, true},
		{`["stdout","x"]`, false},
		{`["set_size",24,80]`, false},
		{`[["stdin"]]`, false},
		{`{"stdin":"x"}`, false},
		{`"stdin"`, false},
		{``, false},
	}
	for _, tt := range tests {
		if got := terminalStdin([]byte(tt.msg)); got != tt.want {
			t.Errorf("terminalStdin(%s) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

func TestChannelKind(t *testing.T) {
	tests := []struct{ rest, want string }{
		{"/api/kernels/k1/channels", ActivityExecute},
		{"/terminals/websocket/1", ActivityTerminal},
		{"/api/kernels/k1", ""},
		{"/api/kernels/k1/channels/x", ""},
		{"/api/events/subscribe", ""},
		{"/terminals/websocket", ""},
	}
	for _, tt := range tests {
		if got := channelKind(tt.rest); got != tt.want {
			t.Errorf("channelKind(%s) = %q, want %q", tt.rest, got, tt.want)
		}
	}
}

// refMsgType is kernelMsgType by decoding the whole message (keys are
// matched exactly and the last repeat wins, as in Python).
func refMsgType(msg []byte) string {
	var m map[string]any
	if json.Unmarshal(msg, &m) != nil {
		return ""
	}
	if h, ok := m["header"].(map[string]any); ok {
		if s, ok := h["msg_type"].(string); ok && s != "" {
			return s
		}
	}
	s, _ := m["msg_type"].(string)
	return s
}

func refStdin(msg []byte) bool {
	var a []any
	return json.Unmarshal(msg, &a) == nil && len(a) > 0 && a[0] == "stdin"
}

// FuzzActivity: the parsers never panic, on any bytes (heads of messages
// included), and agree with a whole decode on complete JSON.
func FuzzActivity(f *testing.F) {
	for _, s := range []string{
		`{"header":{"msg_id":"m","msg_type":"execute_request","version":"5.3"},"content":{"code":"1"},"channel":"shell"}`,
		`{"msg_type":"kernel_info_request","header":{}}`,
		`{"header":{"msg_type":"a"},"header":7,"msg_type":"b"}`,
		`["stdin","ls\r"]`, `["set_size",1,2]`, `{"a":[{"b":null}],"msg_type":"x"}`, `[`, `{"header":{"msg_type":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		typ := kernelMsgType(msg)
		stdin := terminalStdin(msg)
		active(ActivityExecute, msg)
		active(ActivityTerminal, msg)
		if !json.Valid(msg) {
			return
		}
		if want := refMsgType(msg); typ != want {
			t.Errorf("kernelMsgType(%s) = %q, want %q", msg, typ, want)
		}
		if want := refStdin(msg); stdin != want {
			t.Errorf("terminalStdin(%s) = %v, want %v", msg, stdin, want)
		}
	})
}
