package eval

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/agentdlq/agentdlq/pipeline"
	"github.com/agentdlq/agentdlq/triage"
	"github.com/agentdlq/agentdlq/triage/report"
	"github.com/agentdlq/agentdlq/triage/store"
)

// errExport marks every export failure (the report says so too: its
// Export.Error, and it is partial). The DLQ is never touched by an export,
// so a failed export loses nothing: rerun it.
var errExport = errors.New("triage: eval export failed")

// exportErr says which step of an export failed where; errors.Is(err,
// errExport) holds.
func exportErr(dest, op, key string, err error) error {
	return fmt.Errorf("%w: to %s: %s %s: %w", errExport, dest, op, key, err)
}

// manifestVersion is the version of the export manifest document.
const manifestVersion = 1

// manifest describes one export.
type manifest struct {
	ManifestVersion int       `json:"manifest_version"`
	Pipeline        string    `json:"pipeline"`
	ExportedAt      time.Time `json:"exported_at"`
	// ReportSHA256 is the hex SHA-256 of the report's JSON (without its export section).
	ReportSHA256 string `json:"report_sha256"`
	RecordsKey   string `json:"records_key,omitempty"`
	// Candidates are the records the report yielded; Exported the new ones;
	// AlreadyExported those an earlier export holds (by id).
	Candidates      int            `json:"candidates"`
	Exported        int            `json:"exported"`
	AlreadyExported int            `json:"already_exported"`
	ByReason        map[string]int `json:"by_reason"`
	IDs             []string       `json:"ids"`
	Skipped         []report.Entry `json:"skipped"`
}

// exportPrefix is the key prefix of a pipeline's eval exports on a
// day: "<pipeline>/<yyyy-mm-dd>/".
func exportPrefix(pipelineName string, now time.Time) string {
	return pipelineName + "/" + now.UTC().Format("2006-01-02") + "/"
}

// stamp names the files of one run: the time and the report hash's start.
func stamp(now time.Time, reportHash string) string {
	return now.UTC().Format("150405Z") + "-" + reportHash[:8]
}

// Export writes the report's new eval records as JSONL and a manifest to
// dest under exportPrefix: records whose id any earlier export of the
// pipeline holds are left out, so a case is never exported twice. It sets
// r.Export (also on failure, with the error, and marks the report partial)
// and adds what it skipped to r.Skipped.
func Export(ctx context.Context, dest store.Destination, r *report.Report, p *pipeline.Pipeline, now time.Time) (*report.ExportResult, error) {
	hash := r.SHA256()
	res := &report.ExportResult{Destination: dest.String(), IDs: []string{}, SampleIDs: []string{}}
	r.Export = res
	fail := func(err error) (*report.ExportResult, error) {
		res.Error = err.Error()
		r.Partial = true
		r.PartialReasons = append(r.PartialReasons, "eval export failed: "+err.Error())
		return res, err
	}

	records, skipped := evalRecords(r, p)
	r.Skipped = append(r.Skipped, skipped...)
	res.Candidates = len(records)
	existing, err := existingIDs(ctx, dest, p.Name)
	if err != nil {
		return fail(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	byReason := map[string]int{}
	for _, rec := range records {
		if existing[rec.ID] {
			res.AlreadyExported++
			continue
		}
		if err := enc.Encode(rec); err != nil {
			return fail(exportErr(dest.String(), "encode record", rec.ID, err))
		}
		res.IDs = append(res.IDs, rec.ID)
		byReason[string(rec.Expected.Reason)]++
	}
	res.Exported = len(res.IDs)
	res.SampleIDs = res.IDs[:min(len(res.IDs), 20)]
	prefix := exportPrefix(p.Name, now)
	st := stamp(now, hash)
	if res.Exported > 0 {
		key := prefix + "evals-" + st + ".jsonl"
		if err := dest.Put(ctx, key, buf.Bytes(), "application/x-ndjson"); err != nil {
			return fail(exportErr(dest.String(), "write records", key, err))
		}
		res.RecordsKey = key
	}
	m := manifest{
		ManifestVersion: manifestVersion, Pipeline: p.Name, ExportedAt: now.UTC(), ReportSHA256: hash,
		RecordsKey: res.RecordsKey, Candidates: res.Candidates, Exported: res.Exported, AlreadyExported: res.AlreadyExported,
		ByReason: byReason, IDs: res.IDs, Skipped: append([]report.Entry{}, skipped...),
	}
	data, _ := json.MarshalIndent(&m, "", "  ")
	msum := sha256.Sum256(data)
	key := prefix + "manifest-" + st + "-" + hex.EncodeToString(msum[:])[:8] + ".json" // never overwrites another export's manifest
	if err := dest.Put(ctx, key, append(data, '\n'), "application/json"); err != nil {
		return fail(exportErr(dest.String(), "write manifest", key, err))
	}
	res.ManifestKey = key
	return res, nil
}

// evalsKey matches the records files Export writes: "<pipeline>/<yyyy-mm-dd>/evals-….jsonl".
var evalsKey = regexp.MustCompile(`^[^/]+/\d{4}-\d{2}-\d{2}/evals-[^/]+\.jsonl$`)

// existingIDs reads the ids of every eval record already exported for a
// pipeline: every records file under "<pipeline>/<yyyy-mm-dd>/" (other
// objects under the prefix, such as the redrive's audit records, are not read).
func existingIDs(ctx context.Context, dest store.Destination, pipelineName string) (map[string]bool, error) {
	keys, err := dest.List(ctx, pipelineName+"/")
	if err != nil {
		return nil, exportErr(dest.String(), "read existing ids", pipelineName+"/", err)
	}
	ids := map[string]bool{}
	for _, key := range keys {
		if !evalsKey.MatchString(key) {
			continue
		}
		data, err := dest.Get(ctx, key)
		if err != nil {
			return nil, exportErr(dest.String(), "read existing ids", key, err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
		for sc.Scan() {
			var rec struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.ID != "" {
				ids[rec.ID] = true
			}
		}
		if err := sc.Err(); err != nil {
			return nil, exportErr(dest.String(), "read existing ids", key, err)
		}
	}
	return ids, nil
}

// To is the triage.Exporter that exports each run's eval records to dest
// with Export (triage.Config.Export).
func To(dest store.Destination) triage.Exporter { return exporter{dest} }

type exporter struct{ dest store.Destination }

func (e exporter) Export(ctx context.Context, r *report.Report, p *pipeline.Pipeline, now time.Time) (*report.ExportResult, error) {
	return Export(ctx, e.dest, r, p, now)
}
