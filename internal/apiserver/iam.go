package apiserver

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
	"github.com/atelier-dev/atelier/internal/meta"
)

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func apiUser(u *meta.User) api.User {
	return api.User{UserID: u.ID, Name: u.Name, Admin: u.Admin, CreateTime: ms(u.CreateTime)}
}

func apiKey(k *meta.AccessKey, user string) api.AccessKey {
	return api.AccessKey{AccessKey: k.AccessKey, User: user, Status: string(k.Status), Description: k.Description, CreateTime: ms(k.CreateTime)}
}

func apiToken(t *meta.Token, user string) api.Token {
	return api.Token{TokenID: t.ID, User: user, AccessKey: t.AccessKey, CreateTime: ms(t.CreateTime), ExpiresAt: ms(t.ExpiresAt), Revoked: t.Revoked}
}

func (s *Server) apiPolicy(r *http.Request, p *meta.Policy) api.Policy {
	return api.Policy{PolicyID: p.ID, Name: p.Name, Description: p.Description, Document: json.RawMessage(p.Document),
		Owner: s.deps.Auth.UserName(r.Context(), p.OwnerID), CreateTime: ms(p.CreateTime)}
}

// ---- tokens ----

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req api.CreateTokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.DurationSeconds < 0 {
		return errs.E("apiserver.createToken", errs.Invalid, auth.CodeBadDuration, "duration_seconds must not be negative")
	}
	t, tok, err := s.deps.Auth.CreateToken(r.Context(), req.AccessKey, req.SecretKey, time.Duration(req.DurationSeconds)*time.Second)
	if err != nil {
		return err
	}
	out := apiToken(t, s.deps.Auth.UserName(r.Context(), t.UserID))
	out.Token = tok
	w.Header().Set("X-Subject-Token", tok) // as ModelArts' IAM answers
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	ts, total, err := s.deps.Auth.ListTokens(r.Context(), p, opts)
	if err != nil {
		return err
	}
	items := make([]api.Token, len(ts))
	for i, t := range ts {
		items[i] = apiToken(t, p.User.Name)
	}
	writeJSON(w, http.StatusOK, list(items, total))
	return nil
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.RevokeToken(r.Context(), p, r.PathValue("token_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	names := p.PolicyNames
	if names == nil {
		names = []string{}
	}
	writeJSON(w, http.StatusOK, api.Whoami{UserID: p.User.ID, Name: p.User.Name, Admin: p.User.Admin, AuthMethod: p.Method,
		AccessKey: p.AccessKey, Policies: names, Temporary: p.Temporary, ExpiresAt: ms(p.ExpiresAt)})
	return nil
}

// ---- users ----

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.CreateUserRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	u, err := s.deps.Auth.CreateUser(r.Context(), p, req.Name, req.Admin)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, apiUser(u))
	return nil
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	us, total, err := s.deps.Auth.ListUsers(r.Context(), p, opts)
	if err != nil {
		return err
	}
	items := make([]api.User, len(us))
	for i, u := range us {
		items[i] = apiUser(u)
	}
	writeJSON(w, http.StatusOK, list(items, total))
	return nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	u, ps, err := s.deps.Auth.GetUser(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	out := apiUser(u)
	out.Policies = []string{}
	for _, mp := range ps {
		out.Policies = append(out.Policies, mp.Name)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.DeleteUser(r.Context(), p, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) attachPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.AttachPolicyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := s.deps.Auth.AttachPolicy(r.Context(), p, r.PathValue("name"), req.Policy); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) detachPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.DetachPolicy(r.Context(), p, r.PathValue("name"), r.PathValue("policy")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) listUserPolicies(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	ps, err := s.deps.Auth.UserPolicies(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	items := make([]api.Policy, len(ps))
	for i, mp := range ps {
		items[i] = s.apiPolicy(r, mp)
	}
	writeJSON(w, http.StatusOK, list(items, len(items)))
	return nil
}

// ---- access keys ----

func (s *Server) createAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.CreateAccessKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k, secret, err := s.deps.Auth.CreateAccessKey(r.Context(), p, req.User, req.Description)
	if err != nil {
		return err
	}
	out := apiKey(k, s.deps.Auth.UserName(r.Context(), k.UserID))
	out.SecretKey = secret
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) listAccessKeys(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	user := r.URL.Query().Get("user")
	ks, total, err := s.deps.Auth.ListAccessKeys(r.Context(), p, user, opts)
	if err != nil {
		return err
	}
	if user == "" {
		user = p.User.Name
	}
	items := make([]api.AccessKey, len(ks))
	for i, k := range ks {
		items[i] = apiKey(k, user)
	}
	writeJSON(w, http.StatusOK, list(items, total))
	return nil
}

func (s *Server) getAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, err := s.deps.Auth.GetAccessKey(r.Context(), p, r.PathValue("access_key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiKey(k, s.deps.Auth.UserName(r.Context(), k.UserID)))
	return nil
}

func (s *Server) updateAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.UpdateAccessKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k, err := s.deps.Auth.SetAccessKeyStatus(r.Context(), p, r.PathValue("access_key"), meta.KeyStatus(req.Status))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiKey(k, s.deps.Auth.UserName(r.Context(), k.UserID)))
	return nil
}

func (s *Server) deleteAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.DeleteAccessKey(r.Context(), p, r.PathValue("access_key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ---- policies ----

func (s *Server) createPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.CreatePolicyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Document) == 0 || string(req.Document) == "null" {
		return errs.E("apiserver.createPolicy", errs.Invalid, CodeEmptyBody, `field "document" is required: a policy document object`,
			errs.Hint(`e.g. {"Version":"1.1","Statement":[{"Effect":"Allow","Action":["obs:GetObject"],"Resource":["obs:::bucket/*"]}]}`))
	}
	mp, err := s.deps.Auth.CreatePolicy(r.Context(), p, req.Name, req.Description, req.Document)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.apiPolicy(r, mp))
	return nil
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	ps, total, err := s.deps.Auth.ListPolicies(r.Context(), p, opts)
	if err != nil {
		return err
	}
	items := make([]api.Policy, len(ps))
	for i, mp := range ps {
		items[i] = s.apiPolicy(r, mp)
	}
	writeJSON(w, http.StatusOK, list(items, total))
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	mp, users, err := s.deps.Auth.GetPolicy(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	out := s.apiPolicy(r, mp)
	out.Users = users
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.DeletePolicy(r.Context(), p, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
