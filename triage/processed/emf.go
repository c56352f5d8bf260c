package processed

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"slices"
	"time"
)

// maxLine bounds one line of an EMF file (a worker's log line is far
// shorter; a longer one is counted malformed, not read whole).
const maxLine = 1 << 20

// EMFCount is what a read of EMF lines found.
type EMFCount struct {
	// Processed is the sum of the Processed values counted.
	Processed int `json:"processed"`
	// Documents are the documents counted: the pipeline's, with Processed
	// on the dimension set [Pipeline], time-stamped within the period.
	Documents int `json:"documents"`
	// The lines skipped: documents of another pipeline; EMF documents
	// without the pipeline's Processed (other metrics, other dimension
	// sets, other namespaces); the pipeline's, outside the period; and
	// lines that are not JSON or whose EMF is unreadable (a Processed or
	// Timestamp not a number).
	OtherPipelines int `json:"other_pipelines"`
	OtherMetrics   int `json:"other_metrics"`
	OutsidePeriod  int `json:"outside_period"`
	Malformed      int `json:"malformed"`
	// NotEMF are JSON lines without "_aws" (the worker's slog lines, in
	// the same file), skipped without a word.
	NotEMF int `json:"not_emf"`
}

// emfLine is the part of an EMF document ReadEMF reads.
type emfLine struct {
	AWS *struct {
		Timestamp         json.Number `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
	Pipeline  *string      `json:"Pipeline"`
	Processed *json.Number `json:"Processed"`
}

// ReadEMF sums the Processed values of the pipeline's EMF documents in r,
// one JSON document a line, whose _aws.Timestamp (Unix milliseconds) is
// within [from, to). It counts what it skips (EMFCount): another
// pipeline's, other metrics, outside the period, and malformed lines are
// never fatal. Only a read of r that fails is an error.
func ReadEMF(r io.Reader, pipeline string, from, to time.Time) (EMFCount, error) {
	var c EMFCount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var l emfLine
		if err := json.Unmarshal(line, &l); err != nil {
			c.Malformed++
			continue
		}
		if l.AWS == nil {
			c.NotEMF++
			continue
		}
		if !processedDirective(&l) || l.Processed == nil {
			c.OtherMetrics++
			continue
		}
		if l.Pipeline == nil || *l.Pipeline != pipeline {
			c.OtherPipelines++
			continue
		}
		ms, err1 := l.AWS.Timestamp.Int64()
		n, err2 := l.Processed.Int64()
		if err1 != nil || err2 != nil || n < 0 {
			c.Malformed++
			continue
		}
		if at := time.UnixMilli(ms); at.Before(from) || !at.Before(to) {
			c.OutsidePeriod++
			continue
		}
		c.Processed += int(n)
		c.Documents++
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	return c, nil
}

// processedDirective: the document declares Processed in namespace
// AgentDLQ on the dimension set [Pipeline] (the worker's; its per-reason
// documents carry DeadLettered on [Pipeline, Reason]).
func processedDirective(l *emfLine) bool {
	for _, d := range l.AWS.CloudWatchMetrics {
		if d.Namespace != Namespace || !slices.ContainsFunc(d.Dimensions, func(s []string) bool { return slices.Equal(s, []string{DimPipeline}) }) {
			continue
		}
		for _, m := range d.Metrics {
			if m.Name == MetricProcessed {
				return true
			}
		}
	}
	return false
}

// EMFFile reads the processed count from a file of EMF lines a local
// worker wrote (agentdlq work's stderr; agentdlq demo's worker.log, beside
// its slog lines): locally there is no CloudWatch. Lines it skips are
// logged with their counts, never fatal; a file it cannot read is an error.
type EMFFile struct {
	// Path is required.
	Path string
	// Logger is optional (default slog.Default()).
	Logger *slog.Logger
}

// String says where the count is read, for the report.
func (f EMFFile) String() string {
	return "the EMF lines of " + f.Path + " (a local worker's Processed)"
}

// Processed sums the pipeline's Processed documents of the file within [from, to).
func (f EMFFile) Processed(ctx context.Context, pipeline string, from, to time.Time) (int, error) {
	log := f.Logger
	if log == nil {
		log = slog.Default()
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return 0, readErr(err, "%s", err.Error()) // the path is the caller's own
	}
	defer func() { _ = fh.Close() }() // only read
	c, err := ReadEMF(fh, pipeline, from, to)
	if err != nil {
		return 0, readErr(err, "reading %s: %s", f.Path, err.Error())
	}
	if c.Malformed > 0 {
		log.WarnContext(ctx, "EMF lines skipped: not JSON, or a Processed or Timestamp not a number", "file", f.Path, "malformed", c.Malformed)
	}
	log.InfoContext(ctx, "processed count read from EMF lines", "file", f.Path, "pipeline", pipeline, "processed", c.Processed, "documents", c.Documents,
		"other_pipelines", c.OtherPipelines, "other_metrics", c.OtherMetrics, "outside_period", c.OutsidePeriod, "malformed", c.Malformed)
	return c.Processed, nil
}
