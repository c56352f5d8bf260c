package render

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"time"

	"github.com/agentdlq/agentdlq/events/deadletter"
	"github.com/agentdlq/agentdlq/internal/textutil"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

//go:embed html
var htmlFiles embed.FS

// htmlFS holds the report's templates (html/*.tmpl) and its stylesheet
// (html/report.css).
func htmlFS() fs.FS {
	sub, err := fs.Sub(htmlFiles, "html")
	if err != nil {
		panic(err) // the embedded folder exists at build time
	}
	return sub
}

// HTMLStyle is the stylesheet of the report and the console.
func HTMLStyle() []byte {
	b, _ := fs.ReadFile(htmlFS(), "report.css") // embedded: always there
	return b
}

// HTMLView is what the "pipeline" template renders.
type HTMLView struct {
	Report *report.Report
	// History is the pipeline's kept reports, oldest first (History,
	// PointOf): the page charts them.
	History []triage.HistoryPoint
	// Now is the time the page is seen at (report.html: the report's time).
	Now time.Time
	// Console turns groups into links to the console's pages.
	Console bool
	// GroupLimit caps the groups listed per reason (0: all).
	GroupLimit int
	// CSS is the inline stylesheet of report.html.
	CSS template.CSS
	// Extra is what the console's own templates need beside the report
	// (its "pipeline-actions" block); nil in report.html.
	Extra any
	// Query is appended to the console's links to groups and redrives
	// ("&tool=…": the page's filter, which they keep); "" in report.html.
	Query template.URL
	// Notes are words the console shows beside a group, by
	// "reason/fingerprint" (the owner's decision: "rejected"); nil in
	// report.html.
	Notes map[string]string
}

// HTMLTemplates parses the report's templates (the "report" page and the
// "pipeline" view it shares) into a set named name, with their functions
// and then extra's (which win on a name both have). The console parses its
// own templates into the same set, so that its pipeline page and
// report.html are one template.
func HTMLTemplates(name string, extra template.FuncMap) (*template.Template, error) {
	funcs := htmlFuncs()
	maps.Copy(funcs, extra)
	t, err := template.New(name).Funcs(funcs).ParseFS(htmlFS(), "*.tmpl")
	if err != nil {
		return nil, fmt.Errorf("triage: report templates: %w", err)
	}
	return t, nil
}

// htmlFuncs are the template functions of the report's templates.
func htmlFuncs() template.FuncMap {
	return template.FuncMap{
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return "-"
			}
			return t.UTC().Format("2006-01-02 15:04Z")
		},
		"age": age,
		// vis is message content as the page shows it: html/template
		// escapes HTML, not the bidi controls that reorder what follows
		// them, nor the controls a copied line would carry
		// (textutil.Escape); visBlock keeps line breaks and tabs (a body).
		"vis":          textutil.Escape,
		"visBlock":     textutil.EscapeBlock,
		"filterLine":   func(fd *dlq.Filtered) string { return fd.Summary() },
		"chart":        buildChart,
		"since":        since,
		"condition":    condition,
		"coverage":     Coverage,
		"tenantLabel":  report.TenantLabel,
		"topReasons":   TopReasons,
		"sloLine":      SLOLine,
		"otherPartial": otherPartialReasons,
		"add":          func(a, b float64) float64 { return a + b },
		"sub":          func(a, b float64) float64 { return a - b },
		"half":         func(a float64) float64 { return a / 2 },
		"groupsOf": func(r *report.Report, reason deadletter.Reason, limit int) []report.Group {
			gs := groupsOf(r, reason)
			if limit > 0 && len(gs) > limit {
				gs = gs[:limit]
			}
			return gs
		},
		"moreGroups": func(r *report.Report, reason deadletter.Reason, limit int) int {
			if n := len(groupsOf(r, reason)); limit > 0 && n > limit {
				return n - limit
			}
			return 0
		},
	}
}

// groupsOf returns the report's groups of one reason (a sub-slice: the
// report keeps a reason's groups together).
func groupsOf(r *report.Report, reason deadletter.Reason) []report.Group {
	start := -1
	for i := range r.Groups {
		if r.Groups[i].Reason == reason {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			return r.Groups[start:i]
		}
	}
	if start < 0 {
		return nil
	}
	return r.Groups[start:]
}

// condition says in a few words whether and when a reason's dead letters
// may be redriven (the redrive policy's condition).
func condition(r deadletter.Redrivable) string {
	switch r {
	case deadletter.RedriveYes:
		return "yes"
	case deadletter.RedriveAfterFix:
		return "after the fix is deployed"
	case deadletter.RedriveAfterReview:
		return "after a review"
	case deadletter.RedriveNeverBlind:
		return "never blindly: reconcile each key first"
	case deadletter.RedriveNever:
		return "no: reject (owner override only)"
	default:
		return string(r)
	}
}

// reportGroupLimit caps the groups per reason report.html lists; the JSON
// beside it has them all.
const reportGroupLimit = 200

// HTML writes the report as one self-contained page: inline styles, the
// chart of history as inline SVG, no script and nothing fetched.
func HTML(w io.Writer, r *report.Report, history []triage.HistoryPoint) error {
	t, err := HTMLTemplates("report", nil)
	if err != nil {
		return err
	}
	v := HTMLView{Report: r, History: history, Now: r.GeneratedAt, GroupLimit: reportGroupLimit, CSS: template.CSS(HTMLStyle())}
	return t.ExecuteTemplate(w, "report", v)
}
