package apiserver

import (
	"net/http"
	"time"

	"github.com/atelier-dev/atelier/internal/api"
	"github.com/atelier-dev/atelier/internal/auth"
	"github.com/atelier-dev/atelier/internal/errs"
)

// ---- tokens ----

func (s *Server) createToken(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
	var req api.CreateTokenRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if req.DurationSeconds < 0 {
		return errs.E("apiserver.createToken", errs.Invalid, auth.CodeBadDuration, "duration_seconds must not be negative")
	}
	t, err := s.deps.Auth.CreateToken(r.Context(), req.AccessKey, req.SecretKey, time.Duration(req.DurationSeconds)*time.Second)
	if err != nil {
		return err
	}
	w.Header().Set("X-Subject-Token", t.Token) // as ModelArts' IAM answers
	writeJSON(w, http.StatusCreated, t)
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
	writeJSON(w, http.StatusOK, list(ts, total))
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
	writeJSON(w, http.StatusOK, p.Whoami())
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
	writeJSON(w, http.StatusCreated, u)
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
	writeJSON(w, http.StatusOK, list(us, total))
	return nil
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	u, err := s.deps.Auth.GetUser(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
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
	writeJSON(w, http.StatusOK, list(ps, len(ps)))
	return nil
}

// ---- access keys ----

func (s *Server) createAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.CreateAccessKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k, err := s.deps.Auth.CreateAccessKey(r.Context(), p, req.User, req.Description)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, k)
	return nil
}

func (s *Server) listAccessKeys(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	opts, err := listOptions(r)
	if err != nil {
		return err
	}
	ks, total, err := s.deps.Auth.ListAccessKeys(r.Context(), p, r.URL.Query().Get("user"), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list(ks, total))
	return nil
}

func (s *Server) getAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	k, err := s.deps.Auth.GetAccessKey(r.Context(), p, r.PathValue("access_key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}

func (s *Server) updateAccessKey(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	var req api.UpdateAccessKeyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	k, err := s.deps.Auth.SetAccessKeyStatus(r.Context(), p, r.PathValue("access_key"), req.Status)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
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
	pol, err := s.deps.Auth.CreatePolicy(r.Context(), p, req.Name, req.Description, req.Document)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, pol)
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
	writeJSON(w, http.StatusOK, list(ps, total))
	return nil
}

func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	pol, err := s.deps.Auth.GetPolicy(r.Context(), p, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, pol)
	return nil
}

func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
	if err := s.deps.Auth.DeletePolicy(r.Context(), p, r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
