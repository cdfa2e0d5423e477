package store

import (
	"errors"
	"fmt"
)

// DefaultTenant is the tenant of data sent without one.
const DefaultTenant = "default"

// MaxTenantLen bounds a tenant id (Loki's limit is 150).
const MaxTenantLen = 150

// ErrBadTenant is matched by the error for an invalid tenant id.
var ErrBadTenant = errors.New("invalid tenant id")

// checkTenant accepts ids of letters, digits and - _ . (not "." or ".."
// alone), so that a tenant id is always one safe directory name. Callers
// decode URLs fully before checking.
func checkTenant(t string) error {
	if t == "" || len(t) > MaxTenantLen || t == "." || t == ".." {
		return fmt.Errorf("%w %q: 1 to %d characters of A-Z a-z 0-9 - _ .", ErrBadTenant, t, MaxTenantLen)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("%w %q: byte %d is %q; allowed are A-Z a-z 0-9 - _ .", ErrBadTenant, t, i, c)
		}
	}
	return nil
}

// CheckTenant reports whether t is a valid tenant id.
func CheckTenant(t string) error { return checkTenant(t) }
