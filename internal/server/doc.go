// Package server is sluice's HTTP server: the ingest endpoints of every
// protocol, readiness, metrics and profiling, with tenancy, request limits
// and durable acknowledgements (a 2xx is sent only once the WAL has every
// accepted line). Protocol packages under internal/protocol decode bodies;
// the store keeps what they decode.
package server
