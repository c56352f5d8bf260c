package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/redrive/redrivetype"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/dlq"
	"github.com/agentdlq/agentdlq/triage/report"
)

// pageFilter is a page's filter (the URL's tool, tenant, since, until and
// contains: the CLI's flags), parsed into a dlq.Filter: the console
// only reads it, Filter.Match matches it.
type pageFilter struct {
	// Raw are the values as the URL gave them, for the form.
	Raw map[string]string
	// F is the parsed filter (zero when none, or when Err is set).
	F dlq.Filter
	// Err says why the filter could not be read.
	Err string
	// Query is F as the query of a link ("&tool=…&since=…", times in RFC
	// 3339): every link of a filtered page keeps it.
	Query template.URL
	// Hidden are F's fields, for the hidden inputs of a form.
	Hidden map[string]string
}

// filterOf reads the filter of r (its URL, or its form when posted).
func (s *Server) filterOf(r *http.Request) pageFilter {
	pf := pageFilter{Raw: map[string]string{}}
	for _, k := range dlq.FilterFields {
		if v := r.FormValue(k); v != "" {
			pf.Raw[k] = v
		}
	}
	f, err := triage.ParseFilter(pf.Raw["tool"], pf.Raw["tenant"], pf.Raw["since"], pf.Raw["until"], pf.Raw["contains"], s.cfg.Now())
	if err != nil {
		pf.Err = err.Error()
		return pf
	}
	pf.F, pf.Hidden = f, f.Fields()
	if !f.IsZero() {
		q := url.Values{}
		for k, v := range pf.Hidden {
			q.Set(k, v)
		}
		pf.Query = template.URL("&" + q.Encode())
	}
	return pf
}

// On reports whether the page is filtered.
func (pf pageFilter) On() bool { return !pf.F.IsZero() }

// narrowed is the snapshot's report narrowed to the filter's letters; a
// report read from the kept reports holds no letters: the error says to
// refresh.
func (s *Server) narrowed(p *pipeline.Pipeline, sn *snapshot, pf pageFilter) (*report.Report, string) {
	if !pf.On() || sn == nil || sn.report == nil {
		return reportOf(sn), ""
	}
	rep, err := triage.Narrow(sn.report, p, pf.F)
	if err != nil {
		return nil, "Filters need the letters: this report was read from the kept reports. Refresh the pipeline (a read-only triage scan), then filter."
	}
	return rep, ""
}

// filteredReport is the page's filter and the snapshot's report narrowed
// to it, for the pages that cannot show the whole report instead (group,
// redrive): a bad filter is rendered as a 400, a report without letters as
// a 409 saying to refresh, and ok is false.
func (s *Server) filteredReport(w http.ResponseWriter, r *http.Request, p *pipeline.Pipeline, sn *snapshot) (rep *report.Report, pf pageFilter, ok bool) {
	pf = s.filterOf(r)
	if pf.Err != "" {
		s.render(w, r, http.StatusBadRequest, "message", page{Title: "Bad filter", P: p, Data: pf.Err})
		return nil, pf, false
	}
	rep, why := s.narrowed(p, sn, pf)
	if why != "" {
		s.render(w, r, http.StatusConflict, "message", page{Title: "Refresh first", P: p, Data: why})
		return nil, pf, false
	}
	return rep, pf, true
}

func reportOf(sn *snapshot) *report.Report {
	if sn == nil {
		return nil
	}
	return sn.report
}

// filteredStepLinks is stepLinks on a filtered page: each link keeps the
// filter (a select, a reconciliation and a plan are of its letters).
func filteredStepLinks(p string, steps []redrivetype.Step, query template.URL) []stepLink {
	out := stepLinks(p, steps)
	for i := range out {
		if out[i].Href == "" || query == "" {
			continue
		}
		href, frag, _ := strings.Cut(out[i].Href, "#")
		out[i].Href = href + string(query)
		if frag != "" {
			out[i].Href += "#" + frag
		}
	}
	return out
}
