// Package pageviews counts page views per user per 5-minute tumbling window,
// final results only: views (JSON, keyed by page) are grouped by their user
// (through a repartition topic), counted per user and window in the window
// store "views" with 30 seconds of grace for late views, and each window's
// count is written once, when the window closes, to topic views-per-user,
// keyed by Kafka Streams' time-windowed key (user, window start).
package pageviews

//go:generate go tool kgen generate
