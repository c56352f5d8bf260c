package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentdlq/agentdlq/events/agenttask"
	"github.com/agentdlq/agentdlq/ledger"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/render"
	"github.com/agentdlq/agentdlq/triage/store"
)

//go:embed templates/*.tmpl static/*
var files embed.FS

// SQSAPI is what the console needs of SQS: the overview's queue
// attributes, triage's scan, and what a redrive.Redriver calls (the SDK
// client is all of them).
type SQSAPI interface {
	redrive.API
	triage.ScanAPI
}

// ErrQueuesNotFound is what Config.Resolve wraps when a pipeline's queues
// do not exist (not created locally, not deployed in this account and
// region): a defined pipeline without queues is a fact to show, not an
// error.
var ErrQueuesNotFound = errors.New("the pipeline's queues do not exist")

// Config is one console. The CLI (agentdlq ui) builds it from the AWS
// config; tests build it on the local emulators or fakes.
type Config struct {
	// Pipelines is required: every pipeline the console shows (defaults applied).
	Pipelines []*pipeline.Pipeline
	// Resolve is required: finds a pipeline's hot queue and DLQ. When they
	// do not exist its error wraps ErrQueuesNotFound (errors.Is): the
	// overview then says the pipeline's queues are not created, not that
	// something failed.
	Resolve func(ctx context.Context, p *pipeline.Pipeline) (pipeline.Queues, error)
	// SQS is required.
	SQS SQSAPI
	// STS is required in AWS: the redrive gate's identity check, and the
	// caller every audit record carries. redrive.New decides from the
	// clients whether the check runs (skipped only when every one is on
	// this machine: the local emulators).
	STS redrive.IdentityAPI
	// Evidence is optional: reads the claim checks of oversized dead
	// letters back (an *s3.Client), so that a redrive sends them with every
	// original attribute; without it such a letter stays in the DLQ.
	Evidence redrive.EvidenceAPI
	// EvidenceBucket is the eval bucket, the only one claim checks are read
	// from (redrive.Config.EvidenceBucket).
	EvidenceBucket string
	// EvidenceWriter is optional: keeps the original of a repaired task in
	// EvidenceBucket (redrive.Config.EvidenceWriter); without it the
	// letter page previews repairs and refuses to apply them.
	EvidenceWriter audit.S3PutAPI
	// Catalog is optional: the worker's tools, a repaired task is checked
	// against, and whose verifiers (agenttask.Tool.Verify) "Verify with the
	// tools" runs (redrive.Config.Catalog); without it verify is refused.
	Catalog agenttask.Catalog
	// VerifyNote is optional: why no verifier can run here (agentdlq ui: the
	// sample tools keep no effect store in AWS), shown on the verify page.
	VerifyNote string
	// Ledger is optional: the letter page's ledger entry, triage's counts;
	// a redrive (a dry run included) needs it: redrive.New refuses without
	// one (redrive.ErrNoLedger).
	Ledger ledger.Ledger
	// Breakers is optional: the circuit breakers' store, read only (agentdlq
	// ui: dynamostore.Store on the ledger table). The pipeline page and the
	// overview show each dependency's breaker of a pipeline whose breaker is
	// on; without a store they say the breakers are not read here.
	Breakers BreakerReader
	// Reports is required: where triage reports are kept and read
	// (locally a store.Folder: agentdlq ui's is out/ beside the
	// pipelines.json it found; the eval bucket in AWS).
	Reports store.Destination
	// Audit is optional: a pipeline's audit log (default: the file
	// audit.DefaultPath, under ./out of the working directory;
	// agentdlq ui gives the file `agentdlq redrive` writes, under out/
	// beside the pipelines.json it found).
	Audit func(pipelineName string) AuditLog
	// Token is optional: the access token (default NewToken()).
	Token string
	// Loopback is true when the console is served on a loopback address:
	// it then accepts only loopback Host headers.
	Loopback bool
	// Now is optional (time.Now); Logger is optional (slog.Default()).
	Now    func() time.Time
	Logger *slog.Logger
}

// AuditLog is a pipeline's audit: where records go and how they are read back.
type AuditLog interface {
	audit.Store
	Records(ctx context.Context) ([]audit.Entry, error)
}

// Server is the console: an http.Handler.
type Server struct {
	cfg      Config
	token    string
	csrf     string
	loopback bool
	log      *slog.Logger
	tmpl     *template.Template
	mux      *http.ServeMux
	static   fs.FS

	mu    sync.RWMutex
	snaps map[string]*snapshot // by pipeline name
	jobs  map[string]*Job
	byP   map[string]*pipeline.Pipeline
	// done holds what a reconcile changed, for the page its POST redirects
	// to (by a random id, for reconcileKeep), so that reloading that page
	// shows it again instead of submitting the form again.
	done map[string]reconcileDone
}

// New checks the configuration, parses the templates and reads each
// pipeline's latest kept report (never the DLQ itself).
func New(ctx context.Context, cfg Config) (*Server, error) {
	switch {
	case len(cfg.Pipelines) == 0:
		return nil, errors.New("console: Config.Pipelines is empty")
	case cfg.Resolve == nil || cfg.SQS == nil:
		return nil, errors.New("console: Config needs Resolve and SQS")
	case cfg.Reports == nil:
		return nil, errors.New("console: Config.Reports is required (where triage reports are kept)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Token == "" {
		cfg.Token = NewToken()
	}
	if cfg.Audit == nil {
		cfg.Audit = func(name string) AuditLog {
			return &FileAudit{FileStore: audit.FileStore{Path: audit.DefaultPath(name)}}
		}
	}
	t, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	static, _ := fs.Sub(files, "static")
	s := &Server{
		cfg: cfg, token: cfg.Token, csrf: csrfToken(cfg.Token), loopback: cfg.Loopback, log: cfg.Logger, tmpl: t, static: static,
		snaps: map[string]*snapshot{}, jobs: map[string]*Job{}, byP: map[string]*pipeline.Pipeline{},
	}
	for _, p := range cfg.Pipelines {
		if _, dup := s.byP[p.Name]; dup {
			return nil, fmt.Errorf("console: pipeline %q listed twice", p.Name)
		}
		s.byP[p.Name] = p
		snap, err := s.loadSnapshot(ctx, p)
		if err != nil {
			s.log.WarnContext(ctx, "console: reading kept reports", "pipeline", p.Name, "error", err.Error())
		}
		s.snaps[p.Name] = snap
	}
	s.routes()
	return s, nil
}

// Token is the access token (the CLI prints it once, in the URL).
func (s *Server) Token() string { return s.token }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	m := http.NewServeMux()
	g := func(pattern string, h http.HandlerFunc) { m.Handle(pattern, s.guard(h)) }
	g("GET /{$}", s.overview)
	g("GET /pipeline", s.pipelinePage)
	g("GET /group", s.groupPage)
	g("GET /letter", s.letterPage)
	g("POST /letter/reveal", s.reveal)
	g("GET /redrive", s.redrivePage)
	g("POST /redrive", s.redrivePost)
	g("POST /reject", s.rejectPost)
	g("GET /reconcile", s.reconcilePage)
	g("POST /reconcile", s.reconcilePost)
	g("GET /verify", s.verifyPage)
	g("POST /verify", s.verifyPost)
	g("POST /repair", s.repairPost)
	g("POST /refresh", s.refreshPost)
	g("GET /job", s.jobPage)
	g("GET /audit", s.auditPage)
	g("GET /report.html", s.reportHTML)
	m.Handle("GET /static/", s.guard(http.StripPrefix("/static/", http.HandlerFunc(s.staticFile))))
	s.mux = m
}

// staticFile serves the embedded stylesheet: triage's, then the console's.
func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "console.css" {
		http.NotFound(w, r)
		return
	}
	extra, _ := fs.ReadFile(s.static, "console.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "private, max-age=300")
	_, _ = w.Write(render.HTMLStyle())
	_, _ = w.Write(extra)
}

func parseTemplates() (*template.Template, error) {
	t, err := render.HTMLTemplates("console", consoleFuncs())
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if t, err = t.ParseFS(files, "templates/*.tmpl"); err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	return t, nil
}

func (s *Server) pipeline(r *http.Request) (*pipeline.Pipeline, *snapshot, bool) {
	name := r.FormValue("p")
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.byP[name]
	if !ok {
		return nil, nil, false
	}
	return p, s.snaps[name], true
}
