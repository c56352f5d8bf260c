// Package render writes a report.Report for people: Text for a terminal,
// Markdown for a file or a ticket, and HTML, one self-contained page with
// an SVG chart of the pipeline's kept reports and no script (html/, whose
// templates and stylesheet the console parses into its own pages:
// HTMLTemplates, HTMLStyle, HTMLView). WriteReport keeps a run's report
// as JSON, Markdown and HTML under triage.ReportBase; KeepIn is the
// triage.Keeper that does so for triage.Run.
//
// The CLI (`agentdlq triage`), the console and the triage Lambda all
// render through it; package triage itself renders nothing.
package render
