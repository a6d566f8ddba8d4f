package metrics

import (
	"github.com/kgen-dev/kgen/testdata/golden/multichild/model"
)

// Log is the code of processor "log". kgen wrote this file once and
// will not touch it again: it is yours to edit.
type Log struct{}

var _ LogProcessor = (*Log)(nil)

// Process handles one record from "sum".
func (p *Log) Process(ctx *LogContext, key model.Key, value int64) error {
	// Your code here.
	return nil
}
