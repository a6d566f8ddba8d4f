package appmain

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errors.New("want debug, info, warn or error")
}

func parseClientLevel(s string) (kgo.LogLevel, error) {
	switch strings.ToLower(s) {
	case "", "none", "off":
		return kgo.LogLevelNone, nil
	case "error":
		return kgo.LogLevelError, nil
	case "warn", "warning":
		return kgo.LogLevelWarn, nil
	case "info":
		return kgo.LogLevelInfo, nil
	case "debug":
		return kgo.LogLevelDebug, nil
	}
	return 0, errors.New("want none, error, warn, info or debug")
}

// NewLogger is the logger the configuration asks for, writing to w: text
// or JSON at the configured level. Every line names the instance: the
// configured InstanceID, else the one the runtime picks, once known.
func (c Config) NewLogger(w io.Writer) (*slog.Logger, error) {
	level, err := parseLevel(c.LogLevel)
	if err != nil {
		return nil, err
	}
	// The base handler lets through what either the application's or the
	// client's level wants; instanceHandler filters the application's lines.
	clientLevel, err := parseClientLevel(c.ClientLogLevel)
	if err != nil {
		return nil, err
	}
	base := level
	if clientLevel != kgo.LogLevelNone {
		base = min(base, slogLevel(clientLevel))
	}
	opts := &slog.HandlerOptions{Level: base}
	var h slog.Handler
	switch c.LogFormat {
	case "", "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, checkLogFormat(c.LogFormat)
	}
	ih := &instanceHandler{h: h, id: new(atomic.Pointer[string]), level: level}
	if c.InstanceID != "" {
		ih.setInstance(c.InstanceID)
	}
	return slog.New(ih), nil
}

// instanceHandler adds instance=ID to every record whose logger does not
// name the instance already (the runtime's per-unit loggers do), so lines
// of two instances of one application can be told apart.
type instanceHandler struct {
	h      slog.Handler
	id     *atomic.Pointer[string] // shared by the handlers derived with With
	has    bool                    // an attribute "instance" was added with With
	level  slog.Level              // the application's level
	client bool                    // the Kafka client's lines: the base handler's level only
}

func (h *instanceHandler) setInstance(id string) { h.id.Store(&id) }

func (h *instanceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return (h.client || l >= h.level) && h.h.Enabled(ctx, l)
}

func (h *instanceHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := h.id.Load(); id != nil && !h.has {
		has := false
		r.Attrs(func(a slog.Attr) bool {
			has = a.Key == "instance"
			return !has
		})
		if !has {
			r = r.Clone()
			r.AddAttrs(slog.String("instance", *id))
		}
	}
	return h.h.Handle(ctx, r)
}

func (h *instanceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	has := h.has
	for _, a := range attrs {
		has = has || a.Key == "instance"
	}
	return &instanceHandler{h: h.h.WithAttrs(attrs), id: h.id, has: has, level: h.level, client: h.client}
}

func (h *instanceHandler) WithGroup(name string) slog.Handler {
	return &instanceHandler{h: h.h.WithGroup(name), id: h.id, has: h.has, level: h.level, client: h.client}
}

// setLoggerInstance names the instance in the lines of l, if l came from
// NewLogger and names none yet.
func setLoggerInstance(l *slog.Logger, id string) {
	if ih, ok := l.Handler().(*instanceHandler); ok && id != "" && ih.id.Load() == nil {
		ih.setInstance(id)
	}
}

// clientLogger is the Kafka client's log on l at level: lines marked
// client=kafka, filtered by level rather than by the application's level.
func clientLogger(l *slog.Logger, level kgo.LogLevel) kgo.Logger {
	h := l.Handler()
	if ih, ok := h.(*instanceHandler); ok {
		c := *ih
		c.client = true
		h = &c
	}
	return kgoLogger{l: slog.New(h).With("client", "kafka"), level: level}
}

// kgoLogger is the Kafka client's log (kgo.Logger) on a slog logger.
type kgoLogger struct {
	l     *slog.Logger
	level kgo.LogLevel
}

func (k kgoLogger) Level() kgo.LogLevel { return k.level }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	k.l.Log(context.Background(), slogLevel(level), msg, keyvals...)
}

func slogLevel(level kgo.LogLevel) slog.Level {
	switch level {
	case kgo.LogLevelError:
		return slog.LevelError
	case kgo.LogLevelWarn:
		return slog.LevelWarn
	case kgo.LogLevelInfo:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}
