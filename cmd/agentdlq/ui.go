package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/spf13/cobra"

	"github.com/agentdlq/agentdlq/breaker/dynamostore"
	"github.com/agentdlq/agentdlq/console"
	"github.com/agentdlq/agentdlq/internal/awscfg"
	"github.com/agentdlq/agentdlq/local/topology"
	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive"
	"github.com/agentdlq/agentdlq/redrive/audit"
	"github.com/agentdlq/agentdlq/triage/store"
)

type uiFlags struct {
	addr        string
	noBrowser   bool
	reports     string
	audit       string
	ledgerTable string
	// evidenceBucket is --evidence-bucket: see evalBucketName.
	evidenceBucket string
}

func newUICmd(g *globalFlags) *cobra.Command {
	f := &uiFlags{}
	cmd := &cobra.Command{
		Use:   "ui [--addr 127.0.0.1:0] [--no-browser]",
		Short: "The console: a local web page over triage, the ledger and redrive, for the responder of a DLQ alarm",
		Long: `ui serves the console for every pipeline of the definition, against whatever
the AWS config points at (eval "$(make -s local-env)" for the local
emulators). Its first line on stdout is the URL with a fresh access token;
every request needs the token (a cookie after the first visit), every change
is a POST with a CSRF token, and it binds to loopback unless --addr says
otherwise. Pages render from the kept triage reports (--reports) and the
ledger; Refresh runs triage. Redrive and reject are those of agentdlq redrive,
audited in out/audit/<pipeline>.jsonl beside the pipelines.json found (./out
with --config or $AGENTDLQ_CONFIG; or --audit s3://bucket/prefix, as
agentdlq redrive --audit). Ctrl-C stops it.`,
		Example: `  agentdlq ui
  agentdlq ui --no-browser --addr 127.0.0.1:8080
  agentdlq ui --reports s3://my-eval-bucket --audit s3://my-audit-bucket/agentdlq   # in AWS`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, g) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:0", "address to serve on (port 0: a free port)")
	fl.BoolVar(&f.noBrowser, "no-browser", false, "do not open a browser")
	fl.StringVar(&f.reports, "reports", "", "where triage reports are kept: a folder or s3://bucket/prefix ("+outHelp("")+")")
	fl.StringVar(&f.audit, "audit", "", "audit store, as agentdlq redrive --audit: a JSONL file per pipeline ("+outHelp("audit/<pipeline>.jsonl")+"), or s3://bucket/prefix")
	fl.StringVar(&f.ledgerTable, "ledger-table", "", "ledger table (default $AGENTDLQ_LEDGER_TABLE; agentdlq-ledger with local endpoints)")
	fl.StringVar(&f.evidenceBucket, "evidence-bucket", "", "the eval bucket, the only one a redrive reads claim checks from, as agentdlq redrive select --evidence-bucket (default $AGENTDLQ_EVAL_BUCKET; agentdlq-evals with local endpoints)")
	return cmd
}

func (f *uiFlags) run(cmd *cobra.Command, g *globalFlags) error {
	ctx := cmd.Context()
	if !cmd.Flags().Changed("reports") {
		f.reports = g.outRoot()
	}
	def, err := g.loadFile()
	if err != nil {
		return withExit(2, err)
	}
	cfg, err := awscfg.Load(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	reports, err := store.Parse(f.reports, s3.NewFromConfig(cfg))
	if err != nil {
		return withExit(2, fmt.Errorf("--reports: %w", err))
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return withExit(2, fmt.Errorf("--addr %s: %w", f.addr, err))
	}
	defer func() { _ = ln.Close() }() // a stopped server has closed it already
	addr := ln.Addr().(*net.TCPAddr)
	loopback := addr.IP.IsLoopback()

	rc := clientsOf(cfg, ledgerTableName(f.ledgerTable))
	// The console's redrive and reject are gated as agentdlq redrive's
	// (redrive.New decides from these clients whether the caller check
	// runs); an STS that is not AWS's while it must run is refused here, at
	// once, by the same decision.
	local, err := redrive.Locality(rc)
	if err != nil {
		return withExit(2, err)
	}
	// The catalog ledger verify runs: locally the sample tools' verifiers
	// over the local effect store, so that "Verify with the tools" checks
	// what the local worker did; note says why none can run otherwise.
	catalog, note := verifyCatalog(local)
	client, stsc, s3c := rc.SQS.(*sqs.Client), rc.STS.(*sts.Client), rc.Evidence.(*s3.Client)
	cc := console.Config{
		SQS: client, STS: stsc, Evidence: s3c, EvidenceWriter: s3c, EvidenceBucket: evalBucketName(f.evidenceBucket),
		Catalog: catalog, VerifyNote: note,
		Reports: reports, Loopback: loopback, Logger: g.logger(cmd.ErrOrStderr()),
		Resolve: consoleResolve(client),
	}
	for i := range def.Pipelines {
		cc.Pipelines = append(cc.Pipelines, &def.Pipelines[i])
	}
	if cc.Audit, err = f.consoleAudit(g, s3c); err != nil {
		return err
	}
	if table := ledgerTableName(f.ledgerTable); table != "" {
		cc.Ledger = rc.Ledger
		// The breakers the workers share on the ledger table, read only.
		cc.Breakers = dynamostore.New(dynamodb.NewFromConfig(cfg), table)
	}
	srv, err := console.New(ctx, cc)
	if err != nil {
		return err
	}
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	url := fmt.Sprintf("http://%s/?token=%s", net.JoinHostPort(host, fmt.Sprint(addr.Port)), srv.Token())
	fmt.Fprintf(cmd.OutOrStdout(), "agentdlq ui: %s\n", url)
	if !loopback {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the console is served on %s, beyond this machine; anyone who reaches it with the token above can redrive. The token is shown once.\n", addr)
	}
	if !f.noBrowser {
		openBrowser(url)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "agentdlq ui: stopped")
		return nil
	}
}

// consoleAudit is where the console keeps its audit: the file audit of
// agentdlq redrive (g.auditPath), not the console's default
// (audit.DefaultPath, under ./out of the working directory), or --audit's
// s3://bucket/prefix.
func (f *uiFlags) consoleAudit(g *globalFlags, s3c *s3.Client) (func(string) console.AuditLog, error) {
	if f.audit == "" {
		return func(name string) console.AuditLog {
			return &console.FileAudit{FileStore: audit.FileStore{Path: g.auditPath(name)}}
		}, nil
	}
	bucket, prefix, _, err := audit.ParseDest(f.audit)
	if err != nil {
		return nil, withExit(2, fmt.Errorf("--audit: %w", err))
	}
	if bucket == "" {
		return nil, withExit(2, errors.New("--audit: the console keeps one file per pipeline (the default, out/audit/<pipeline>.jsonl) or s3://bucket/prefix"))
	}
	return func(name string) console.AuditLog {
		return &console.S3Audit{S3Store: audit.S3Store{API: s3c, Bucket: bucket, Prefix: prefix}, Read: s3c, Pipeline: name}
	}, nil
}

// openBrowser opens url in the desktop's browser, if there is one.
func openBrowser(url string) {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name = "explorer"
	}
	if _, err := exec.LookPath(name); err != nil {
		return
	}
	c := exec.Command(name, url)
	if c.Start() == nil {
		go func() { _ = c.Wait() }()
	}
}

// consoleResolve is the console's Resolve: the pipeline's queues as the
// other commands find them; queues that do not exist (not created locally:
// make local-up) are console.ErrQueuesNotFound, which the overview shows
// as such rather than as an error.
func consoleResolve(api topology.ResolveAPI) func(context.Context, *pipeline.Pipeline) (pipeline.Queues, error) {
	return func(ctx context.Context, p *pipeline.Pipeline) (pipeline.Queues, error) {
		q, err := topology.ResolveWith(ctx, api, p, topology.OverrideFromEnv(os.Getenv))
		if errors.Is(err, topology.ErrNotFound) {
			err = fmt.Errorf("%w: %w", console.ErrQueuesNotFound, err)
		}
		return q, err
	}
}
