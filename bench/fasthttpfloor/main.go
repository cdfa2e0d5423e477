// Command fasthttpfloor is bench/httpfloor's nethttp mode on
// github.com/valyala/fasthttp instead of net/http: it reads each POST's
// body and answers 204, so that bench/small.sh can measure, side by side
// with net/http's 204, what a faster HTTP/1.1 server library would leave
// for sluice's own work on one core (issue 18). It is a module of its own
// so that sluice's does not depend on fasthttp for a probe.
//
//	go build -o fasthttpfloor . && taskset -c 0 ./fasthttpfloor -listen 127.0.0.1:3199
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:3199", "address")
	flag.Parse()
	s := &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			// The body is read whole before the handler runs, as
			// net/http's floor reads it to its end.
			_ = ctx.PostBody()
			ctx.SetStatusCode(fasthttp.StatusNoContent)
		},
		Name: "fasthttpfloor",
	}
	log.Fatal(s.ListenAndServe(*addr))
}
