package jsonline

import (
	"encoding/json"
	"strconv"
)

// Reply is the JSON answer of the line protocols (/insert/jsonline,
// /insert/lines).
type Reply struct {
	Accepted int      `json:"accepted"`
	Rejected int      `json:"rejected"`
	Errors   []string `json:"errors,omitempty"` // the first few, as LINE:COL: message
	// TimeFallbacks counts accepted lines whose timestamp was present but
	// unusable: they are stored at the receive time.
	TimeFallbacks int `json:"time_fallbacks,omitempty"`
	// Dropped counts the lines the server's rules dropped (drop, sample,
	// rate_limit): not stored, and no error.
	Dropped int `json:"dropped,omitempty"`
}

// AddError keeps msg among the reply's errors while they are fewer than
// max.
func (r *Reply) AddError(msg string, max int) {
	if len(r.Errors) < max {
		r.Errors = append(r.Errors, msg)
	}
}

// JSON returns the reply's body: a JSON object and a newline.
func (r *Reply) JSON() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic("jsonline: marshal reply: " + err.Error()) // ints and strings cannot fail
	}
	return append(b, '\n')
}

// AppendJSON appends the reply's body, as JSON returns it, to dst. A
// reply without errors (every one-line push that succeeds) is written
// without encoding/json and without allocating.
func (r *Reply) AppendJSON(dst []byte) []byte {
	if len(r.Errors) > 0 {
		return append(dst, r.JSON()...)
	}
	dst = strconv.AppendInt(append(dst, `{"accepted":`...), int64(r.Accepted), 10)
	dst = strconv.AppendInt(append(dst, `,"rejected":`...), int64(r.Rejected), 10)
	if r.TimeFallbacks != 0 {
		dst = strconv.AppendInt(append(dst, `,"time_fallbacks":`...), int64(r.TimeFallbacks), 10)
	}
	if r.Dropped != 0 {
		dst = strconv.AppendInt(append(dst, `,"dropped":`...), int64(r.Dropped), 10)
	}
	return append(dst, "}\n"...)
}
