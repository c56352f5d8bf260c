package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/agentdlq/agentdlq/triage/report"
)

// namespace is the CloudWatch namespace of every agentdlq metric.
const namespace = "AgentDLQ"

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// writeEMF writes the report's metrics in CloudWatch embedded metric format,
// one JSON document a line, as docs/wiring.md pins them:
//
//	dimensions Pipeline:         DLQMessages (Count), DLQOldestAgeSeconds (Seconds),
//	                             DLQHoursToExpiry (None), DLQExpiringSoon (Count),
//	                             RecurringPoisonGroups (Count)
//	dimensions Pipeline, Reason: DLQMessagesByReason (Count), one document a reason
//
// DLQHoursToExpiry is left out when the DLQ is empty: there is nothing to
// lose, and an alarm on it treats missing data as not breaching.
//
// The first document also carries the property ScanComplete (not a metric:
// CloudWatch Logs Insights reads it). When it is false the scan did not see
// every dead letter and the counts are a lower bound; the report says why.
func writeEMF(w io.Writer, r *report.Report, now time.Time) error {
	enc := json.NewEncoder(w)
	ts := now.UnixMilli()
	doc := map[string]any{
		"Pipeline":              r.Pipeline,
		"DLQMessages":           r.Totals.Messages,
		"DLQOldestAgeSeconds":   r.Expiry.OldestAgeSeconds,
		"DLQExpiringSoon":       r.Expiry.ExpiringSoon,
		"RecurringPoisonGroups": r.Totals.RecurringPoisonGroups,
		"ScanComplete":          r.Complete,
	}
	metrics := []emfMetric{
		{"DLQMessages", "Count"}, {"DLQOldestAgeSeconds", "Seconds"},
	}
	if r.Expiry.HoursToSoonest != nil {
		doc["DLQHoursToExpiry"] = *r.Expiry.HoursToSoonest
		metrics = append(metrics, emfMetric{"DLQHoursToExpiry", "None"})
	}
	metrics = append(metrics, emfMetric{"DLQExpiringSoon", "Count"}, emfMetric{"RecurringPoisonGroups", "Count"})
	doc["_aws"] = emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{Namespace: namespace, Dimensions: [][]string{{"Pipeline"}}, Metrics: metrics}}}
	if err := enc.Encode(doc); err != nil {
		return err
	}
	for _, rt := range r.Totals.ByReason {
		if err := enc.Encode(map[string]any{
			"_aws": emfMeta{Timestamp: ts, CloudWatchMetrics: []emfDirective{{
				Namespace: namespace, Dimensions: [][]string{{"Pipeline", "Reason"}},
				Metrics: []emfMetric{{"DLQMessagesByReason", "Count"}},
			}}},
			"Pipeline":            r.Pipeline,
			"Reason":              string(rt.Reason),
			"DLQMessagesByReason": rt.Count,
		}); err != nil {
			return err
		}
	}
	return nil
}
