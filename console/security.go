package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CookieName is the cookie that carries the token after the first visit.
const CookieName = "agentdlq_console"

// csp is the Content-Security-Policy of every response: no script at all,
// styles and images from the console only, forms post to the console only.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// NewToken is a fresh random access token (32 bytes, hex).
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// csrfToken is the CSRF token of an access token: an HMAC of it, so that a
// page can carry it in forms without carrying the access token itself.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("agentdlq console csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// guard wraps every handler: security headers, the Host check, the token
// (query on the first visit, then the cookie) and, for a POST, the CSRF
// token and the origin.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "console: unexpected Host header", http.StatusForbidden)
			return
		}
		if q := r.URL.Query().Get("token"); q != "" {
			if !equal(q, s.token) {
				s.deny(w, r, http.StatusUnauthorized, "That token is not this console's. Open the URL that `agentdlq ui` printed.")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			if r.Method == http.MethodGet {
				// Clean the token out of the address bar and the history.
				u := *r.URL
				v := u.Query()
				v.Del("token")
				u.RawQuery = v.Encode()
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
		} else if c, err := r.Cookie(CookieName); err != nil || !equal(c.Value, s.token) {
			s.deny(w, r, http.StatusUnauthorized, "This console needs its token. Open the URL that `agentdlq ui` printed (it ends in ?token=…).")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Method != http.MethodPost {
				http.Error(w, "console: method not allowed", http.StatusMethodNotAllowed)
				return
			}
			if o := r.Header.Get("Origin"); o != "" && o != "null" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					s.deny(w, r, http.StatusForbidden, "Refused: the request came from another origin.")
					return
				}
			}
			if !equal(r.PostFormValue("csrf"), s.csrf) {
				s.deny(w, r, http.StatusForbidden, "Refused: the form's CSRF token is missing or wrong. Reload the page and try again.")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed accepts the loopback names on any port when the console serves
// loopback, and any host otherwise (the operator chose --addr).
func (s *Server) hostAllowed(host string) bool {
	if !s.loopback {
		return true
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) deny(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.log.WarnContext(r.Context(), "console request refused", "status", code, "method", r.Method, "path", r.URL.Path)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = s.tmpl.ExecuteTemplate(w, "denied", map[string]any{"Code": code, "Message": msg})
}
