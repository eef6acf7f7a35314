package proxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// CookieName is the session cookie of the notebook listener. The REST API
// never reads it.
const CookieName = "atelier_nb"

// SessionTTL is how long a session cookie is valid after its login.
const SessionTTL = 12 * time.Hour

// MinKeySize is the least size of a session key, in bytes.
const MinKeySize = 32

// sessionDomain separates session MACs from any other use of the key.
const sessionDomain = "atelier notebook session v1\x00"

// session is what a session cookie says.
type session struct {
	Notebook string `json:"n"`
	User     string `json:"u"`
	Expires  int64  `json:"e"` // unix seconds
	// Issued is when the session began (unix milliseconds; 0 in cookies
	// made before it was recorded): a sign-out ends the sessions issued
	// until then.
	Issued int64 `json:"i,omitempty"`
}

var (
	errMalformed = errors.New("malformed session cookie")
	errSignature = errors.New("session cookie signature does not match")
	errExpired   = errors.New("session expired")
	errOther     = errors.New("session cookie of another notebook")
	errFuture    = errors.New("session cookie issued in the future")
)

// clockSlack is how far in the future a session may say it was issued (a
// clock stepped back since): beyond it the cookie is refused, since a
// sign-out made on the corrected clock would not end it.
const clockSlack = time.Minute

// sealer signs and checks session cookies with one HMAC-SHA256 key.
type sealer struct{ key []byte }

func (s sealer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(sessionDomain))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// seal is the cookie value of ss: base64url(JSON) "." base64url(MAC).
func (s sealer) seal(ss session) string {
	b, _ := json.Marshal(ss)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// open checks value's signature (in constant time), then its expiry
// against now and its notebook against notebookID, and returns it.
func (s sealer) open(value, notebookID string, now time.Time) (session, error) {
	payload, sig, ok := strings.Cut(value, ".")
	if !ok || payload == "" {
		return session{}, errMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return session{}, errMalformed
	}
	if !hmac.Equal(got, s.mac(payload)) {
		return session{}, errSignature
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return session{}, errMalformed
	}
	var ss session
	if err := json.Unmarshal(b, &ss); err != nil || ss.User == "" || ss.Notebook == "" {
		return session{}, errMalformed
	}
	if now.Unix() >= ss.Expires {
		return session{}, errExpired
	}
	if ss.Notebook != notebookID {
		return session{}, errOther
	}
	if ss.Issued > now.Add(clockSlack).UnixMilli() {
		return session{}, errFuture
	}
	return ss, nil
}

// cookie is the session cookie of user on notebookID, made at now.
func (s sealer) cookie(notebookID, user string, now time.Time, secure bool) *http.Cookie {
	exp := now.Add(SessionTTL)
	return &http.Cookie{
		Name:     CookieName,
		Value:    s.seal(session{Notebook: notebookID, User: user, Expires: exp.Unix(), Issued: now.UnixMilli()}),
		Path:     notebookPath(notebookID),
		Expires:  exp,
		MaxAge:   int(SessionTTL / time.Second),
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// endedCookie clears the session cookie of notebookID.
func endedCookie(notebookID string, secure bool) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: "", Path: notebookPath(notebookID), MaxAge: -1,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
}
