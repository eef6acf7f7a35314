package api

// ConsoleSignIn is POST /api/v1/console/session: the console's sign-in
// form, an access key pair.
type ConsoleSignIn struct {
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
}

// ConsoleSession is the console's session: who is signed in, until when,
// and the CSRF token every state-changing request sends as X-CSRF-Token.
type ConsoleSession struct {
	User      string `json:"user"`
	Admin     bool   `json:"admin"`
	AccessKey string `json:"access_key"`
	CSRFToken string `json:"csrf_token,omitempty"` // only for a session of the console's cookie
	ExpiresAt int64  `json:"expires_at"`
}

// ConsoleLink is POST /api/v1/console/links: a single-use sign-in link
// (`atelier console`).
type ConsoleLink struct {
	URL       string `json:"url"`
	ExpiresAt int64  `json:"expires_at"`
}
