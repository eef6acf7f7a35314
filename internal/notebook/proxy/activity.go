package proxy

import (
	"bytes"
	"encoding/json"
)

// active reports whether msg, the head of a text message a browser sent
// on a websocket of that kind, is a user's activity: an execute_request
// to a kernel, or input to a terminal.
func active(kind string, msg []byte) bool {
	switch kind {
	case ActivityExecute:
		return kernelMsgType(msg) == "execute_request"
	case ActivityTerminal:
		return terminalStdin(msg)
	}
	return false
}

// kernelMsgType is the msg_type of a Jupyter message in JSON: its
// header's msg_type when that is a string, else its top-level msg_type;
// "" when neither. When a key repeats, the last one counts (as in
// Python's json). msg may be only the head of the message: what the
// head holds counts.
func kernelMsgType(msg []byte) string {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	var header, top string
	for {
		key, ok := objectKey(dec)
		if !ok {
			break
		}
		if key == "header" {
			var complete bool
			if header, complete = headerMsgType(dec); !complete {
				break
			}
		} else if key == "msg_type" {
			top = stringValue(dec)
		} else if !skipValue(dec) {
			break
		}
	}
	if header != "" {
		return header
	}
	return top
}

// headerMsgType reads a header value: its msg_type when it is an object
// with a string msg_type (the last of them), else "". complete is false
// when the value could not be read to its end.
func headerMsgType(dec *json.Decoder) (msgType string, complete bool) {
	if !dec.More() {
		return "", false
	}
	t, err := dec.Token()
	if err != nil {
		return "", false
	}
	d, isDelim := t.(json.Delim)
	if !isDelim {
		return "", true // a scalar
	}
	if d != '{' {
		return "", skipRest(dec) // an array
	}
	for {
		key, ok := objectKey(dec)
		if !ok {
			return msgType, closes(dec, '}')
		}
		if key == "msg_type" {
			msgType = stringValue(dec)
			continue
		}
		if !skipValue(dec) {
			return msgType, false
		}
	}
}

// objectKey reads the next key of an object, or reports false at its end
// (or at an error).
func objectKey(dec *json.Decoder) (string, bool) {
	if !dec.More() {
		return "", false
	}
	t, err := dec.Token()
	if err != nil {
		return "", false
	}
	k, ok := t.(string)
	return k, ok
}

// stringValue reads a value: itself when it is a string, else "".
func stringValue(dec *json.Decoder) string {
	var v any
	if dec.Decode(&v) != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}

// skipValue reads a value whole.
func skipValue(dec *json.Decoder) bool {
	var skip json.RawMessage
	return dec.Decode(&skip) == nil
}

// closes reads the delimiter that ends the current object or array.
func closes(dec *json.Decoder, d json.Delim) bool {
	t, err := dec.Token()
	return err == nil && t == d
}

// skipRest reads to the end of an array whose '[' was read.
func skipRest(dec *json.Decoder) bool {
	for dec.More() {
		if !skipValue(dec) {
			return false
		}
	}
	return closes(dec, ']')
}

// terminalStdin reports whether msg (or its head) is a terminado message
// of input: a JSON array whose first element is "stdin".
func terminalStdin(msg []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return false
	}
	t, err := dec.Token()
	return err == nil && t == "stdin"
}
