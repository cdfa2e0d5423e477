package loki

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicelog/sluice/internal/record"
)

// Limits bound what one request may hold.
type Limits struct {
	MaxLabels       int // per stream (Loki: 15)
	MaxLabelNameLen int // Loki: 1024
	MaxLabelValLen  int // Loki: 2048
	MaxLineSize     int // Loki: 256 KB
}

// DefaultLimits are Loki's defaults.
var DefaultLimits = Limits{MaxLabels: 15, MaxLabelNameLen: 1024, MaxLabelValLen: 2048, MaxLineSize: 256 << 10}

// checkLabels sorts ls and checks it against the limits and Prometheus'
// label name syntax.
func (l Limits) checkLabels(ls record.Labels) error {
	if len(ls) == 0 {
		return fmt.Errorf("stream has no labels")
	}
	if len(ls) > l.MaxLabels {
		return fmt.Errorf("stream has %d labels, more than the limit of %d", len(ls), l.MaxLabels)
	}
	slices.SortFunc(ls, func(a, b record.Label) int { return strings.Compare(a.Name, b.Name) })
	for i, lb := range ls {
		if !validLabelName(lb.Name) {
			return fmt.Errorf("invalid label name %q", lb.Name)
		}
		if i > 0 && ls[i-1].Name == lb.Name {
			return fmt.Errorf("duplicate label name %q", lb.Name)
		}
		if len(lb.Name) > l.MaxLabelNameLen {
			return fmt.Errorf("label name %.40q… is %d bytes, more than the limit of %d", lb.Name, len(lb.Name), l.MaxLabelNameLen)
		}
		if len(lb.Value) > l.MaxLabelValLen {
			return fmt.Errorf("value of label %q is %d bytes, more than the limit of %d", lb.Name, len(lb.Value), l.MaxLabelValLen)
		}
	}
	return nil
}

func validLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseLabels reads a label set in Prometheus' text form, as the protobuf
// push carries it: {name="value", other="x"} (values with Go escapes).
func parseLabels(s string) (record.Labels, error) {
	t := strings.TrimSpace(s)
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, fmt.Errorf("labels %q: want {name=\"value\", ...}", s)
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	var ls record.Labels
	for t != "" {
		eq := strings.IndexByte(t, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("labels %q: expected name=\"value\"", s)
		}
		name := strings.TrimSpace(t[:eq])
		t = strings.TrimSpace(t[eq+1:])
		if t == "" || t[0] != '"' {
			return nil, fmt.Errorf("labels %q: value of %s is not quoted", s, name)
		}
		end := 1
		for end < len(t) && t[end] != '"' {
			if t[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(t) {
			return nil, fmt.Errorf("labels %q: unterminated value of %s", s, name)
		}
		value, err := strconv.Unquote(t[:end+1])
		if err != nil {
			return nil, fmt.Errorf("labels %q: value of %s: %v", s, name, err)
		}
		ls = append(ls, record.Label{Name: name, Value: value})
		t = strings.TrimSpace(t[end+1:])
		if t != "" {
			if t[0] != ',' {
				return nil, fmt.Errorf("labels %q: expected ',' after the value of %s", s, name)
			}
			t = strings.TrimSpace(t[1:])
		}
	}
	return ls, nil
}
