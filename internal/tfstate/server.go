// Package tfstate serves Terraform state from knit's store to OpenTofu or
// Terraform, speaking the tool's HTTP backend protocol (GET, POST and
// DELETE of the state; LOCK and UNLOCK) on a loopback port. With it every
// replica on one database reaches every component's state, and the state's
// lock is the store's: two tools applying one component at once, on any
// replicas, cannot both hold it.
//
// Access is granted per state key: Grant returns the settings for the
// tool's environment (TF_HTTP_ADDRESS, TF_HTTP_USERNAME, TF_HTTP_PASSWORD
// and the lock addresses), with a password that reaches that key only and
// lives as long as this knit process (a random secret keys it). Nothing of it is
// written to a file or put in argv; the backend block knit writes into the
// module is empty (`backend "http" {}`).
//
// The store seals the bytes before they reach the database; OpenTofu
// encrypts them itself beforehand when knit configures its state
// encryption, so the server only ever sees ciphertext of such state.
package tfstate

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/store"
)

// DefaultMaxState is the largest state Server accepts when MaxState is
// zero: the server holds one state in memory while sealing it.
const DefaultMaxState = 256 << 20

// Server serves the Terraform HTTP backend protocol from a store. It is
// safe for concurrent use.
type Server struct {
	states store.TFStates
	// MaxState bounds a state the tool may write, in bytes (zero:
	// DefaultMaxState); a larger one is refused with 413 and a message.
	MaxState int64
	// Host names this machine in the locks tools take (default: its host
	// name); set before the first Grant.
	Host string
	// Lease is the runs' lock lease (zero: 60s): a failing store call is
	// retried for up to half of it, and the tools' own retries are sized
	// to it. Set before the first Grant.
	Lease time.Duration

	ln  net.Listener
	srv *http.Server

	secret []byte // keys the passwords
}

// Start listens on a random loopback port and serves states.
func Start(states store.TFStates) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("terraform state backend: listen: %w", err)
	}
	secret := make([]byte, 32)
	rand.Read(secret) //nolint:errcheck // crypto/rand.Read never fails
	host, _ := os.Hostname()
	s := &Server{states: states, ln: ln, secret: secret, Host: host}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute}
	go s.srv.Serve(ln) //nolint:errcheck // ErrServerClosed after Close
	return s, nil
}

// Close stops serving; tools still running lose their backend.
func (s *Server) Close() error { return s.srv.Close() }

// Addr is the server's base URL.
func (s *Server) Addr() string { return "http://" + s.ln.Addr().String() }

// Grant lets a tool process reach key's state for run (the knit run the
// tool works for, which holds key's environment's lock): env is what to
// add to its environment. With write, the tool may lock, write and delete
// the state; without, it only reads it (a plan, a drift check, a preview):
// LOCK, POST and DELETE are refused with 403, so such a tool runs with
// -lock=false. The password is HMAC(secret, key, run, access) under a
// random secret of this server: it reaches key's state only, for that run
// and access only, and dies with the server (a new knit process, new
// passwords). Every request is fenced in the store by run: once run no
// longer holds its environment's lock (it ended, or lost its lease), the
// grant reaches nothing (403), on every host. The run is recorded with
// each lock the tool takes (store.TFStates.LockTFState). A run of "" (or
// one with a colon, which a basic-auth user name cannot carry) gets a
// grant that reaches nothing.
func (s *Server) Grant(key, run string, write bool) map[string]string {
	if strings.Contains(run, ":") {
		run = ""
	}
	addr := s.Addr() + "/state/" + key
	env := map[string]string{
		"TF_HTTP_ADDRESS":        addr,
		"TF_HTTP_LOCK_ADDRESS":   addr,
		"TF_HTTP_UNLOCK_ADDRESS": addr,
		"TF_HTTP_USERNAME":       user(run, write),
		"TF_HTTP_PASSWORD":       s.password(key, run, write),
	}
	for k, v := range s.retryEnv() {
		env[k] = v
	}
	return env
}

// Grants' user names: the access, then the run.
const (
	writeUser = "knit run "
	readUser  = "knit read "
)

func user(run string, write bool) string {
	if write {
		return writeUser + run
	}
	return readUser + run
}

func (s *Server) password(key, run string, write bool) string {
	m := hmac.New(sha256.New, s.secret)
	access := "read"
	if write {
		access = "write"
	}
	m.Write([]byte(key + "\x00" + run + "\x00" + access))
	return hex.EncodeToString(m.Sum(nil))
}

// Import stores data as key's state when the store has none (the one-time
// move of a work dir's local state), reporting whether it did.
func (s *Server) Import(ctx context.Context, key string, data []byte) (bool, error) {
	return s.states.ImportTFState(ctx, key, data)
}

// ReadState returns key's state as stored (nil when there is none), for
// knit to copy into a sandboxed plan's work dir: a sandboxed tool never
// gets a grant (terraform.StateReader).
func (s *Server) ReadState(ctx context.Context, key string) ([]byte, error) {
	data, _, err := s.states.TFState(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return data, err
}

// grant is what a request's credentials grant.
type grant struct {
	run   string
	write bool
}

// allowed reports whether r carries a grant of key's, and which.
func (s *Server) allowed(r *http.Request, key string) (grant, bool) {
	name, pass, ok := r.BasicAuth()
	if !ok {
		return grant{}, false
	}
	var g grant
	var run string
	if run, ok = strings.CutPrefix(name, writeUser); ok {
		g = grant{run: run, write: true}
	} else if run, ok = strings.CutPrefix(name, readUser); ok {
		g = grant{run: run}
	}
	if !ok || g.run == "" {
		return grant{}, false
	}
	return g, hmac.Equal([]byte(pass), []byte(s.password(key, g.run, g.write)))
}

// ServeHTTP implements the protocol on /state/KEY. Every request is fenced
// by its grant's run inside the store's transaction; a write must carry the
// state lock's ID and may not move the state's serial back nor change its
// lineage.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/state/")
	if !ok || key == "" {
		http.NotFound(w, r)
		return
	}
	g, ok := s.allowed(r, key)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="knit terraform state"`)
		http.Error(w, "knit: no valid grant for this state", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && !g.write {
		http.Error(w, "knit: this grant only reads the state (a plan, drift check or preview); nothing was changed", http.StatusForbidden)
		return
	}
	ctx := r.Context()
	switch r.Method {
	case http.MethodGet:
		var data []byte
		err := s.retry(ctx, func() (err error) { data, err = s.states.ReadTFState(ctx, key, g.run); return err })
		if errors.Is(err, store.ErrNotFound) {
			w.WriteHeader(http.StatusNoContent) // no state yet
			return
		}
		if err != nil {
			s.reply(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data) //nolint:errcheck // the tool sees a short body
	case http.MethodPost:
		data, err := s.body(w, r)
		if err != nil {
			return
		}
		h, err := header(data)
		if err != nil {
			http.Error(w, "knit: "+err.Error()+"; nothing was written", http.StatusBadRequest)
			return
		}
		tw := store.TFWrite{Run: g.run, LockID: r.URL.Query().Get("ID"), Serial: h.Serial, Lineage: h.Lineage}
		s.reply(w, s.retry(ctx, func() error { return s.states.PutTFState(ctx, key, data, tw) }))
	case http.MethodDelete:
		tw := store.TFWrite{Run: g.run, LockID: r.URL.Query().Get("ID")}
		s.reply(w, s.retry(ctx, func() error { return s.states.DeleteTFState(ctx, key, tw) }))
	case "LOCK":
		info, id, err := s.lockInfo(w, r)
		if err != nil {
			return
		}
		l := store.TFLock{ID: id, Info: info, Host: s.Host, PID: os.Getpid(), Run: g.run}
		s.reply(w, s.retry(ctx, func() error { return s.states.LockTFState(ctx, key, l, s.deadHolder) }))
	case "UNLOCK":
		_, id, err := s.lockInfo(w, r)
		if err != nil {
			return
		}
		s.reply(w, s.retry(ctx, func() error { return s.states.UnlockTFState(ctx, key, id) }))
	default:
		http.Error(w, "knit: method not allowed", http.StatusMethodNotAllowed)
	}
}

// body reads a state the tool writes, refusing one above MaxState.
func (s *Server) body(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := s.MaxState
	if limit == 0 {
		limit = DefaultMaxState
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		http.Error(w, fmt.Sprintf("knit: the state is larger than knit's limit of %d bytes; nothing was written", limit), http.StatusRequestEntityTooLarge)
		return nil, err
	}
	if err != nil {
		http.Error(w, "knit: read the state: "+err.Error(), http.StatusBadRequest)
	}
	return data, err
}

// lockInfo reads the tool's lock info (JSON with the lock's ID).
func (s *Server) lockInfo(w http.ResponseWriter, r *http.Request) ([]byte, string, error) {
	info, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var li struct{ ID string }
	if err == nil {
		err = json.Unmarshal(info, &li)
	}
	if err == nil && li.ID == "" {
		err = errors.New("no lock ID")
	}
	if err != nil {
		http.Error(w, "knit: unreadable lock info: "+err.Error(), http.StatusBadRequest)
	}
	return info, li.ID, err
}

// reply answers a request: a refusal for another lock is 423 with that
// lock's info, as the tool expects, so its error names who holds the
// state; a write without the lock, or of an older state, is 409; a grant
// whose run no longer holds its environment's lock is 403.
func (s *Server) reply(w http.ResponseWriter, err error) {
	var locked *store.TFLockedError
	switch {
	case err == nil:
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, store.ErrLockLost):
		http.Error(w, "knit: this grant's run no longer holds its environment's lock; nothing was changed: "+err.Error(), http.StatusForbidden)
	case errors.Is(err, store.ErrTFStateConflict):
		http.Error(w, "knit: "+err.Error()+"; nothing was written", http.StatusConflict)
	case errors.As(err, &locked) && locked.Holder.ID != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusLocked)
		info := locked.Holder.Info
		if len(info) == 0 {
			info, _ = json.Marshal(map[string]string{"ID": locked.Holder.ID})
		}
		w.Write(info) //nolint:errcheck // the tool sees a short body
	case errors.As(err, &locked):
		http.Error(w, "knit: "+err.Error()+": a write needs the state's lock; nothing was written", http.StatusConflict)
	default:
		s.fail(w, err)
	}
}

// deadHolder reports whether the knit process a lock was taken through is
// gone: on this machine, another process, and not alive. Its tools can
// never reach its server again, so the lock is stale: a new run (which
// holds the environment's lock and has ended the tools dead runs left on
// this host, engine.EndLeftTools) takes it over. A holder on another
// machine is left alone here: the store judges it by its run instead (a
// lock whose run no longer holds its environment's lock is stale on any
// host).
func (s *Server) deadHolder(h store.TFLock) bool {
	if s.Host == "" || h.Host != s.Host || h.PID <= 0 || h.PID == os.Getpid() {
		return false
	}
	return !procexec.Alive(h.PID)
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	http.Error(w, "knit: terraform state store: "+err.Error(), http.StatusInternalServerError)
}
