package syslog

// parseCases are the table cases; FuzzParse is seeded from them too.
var parseCases = []struct {
	name, in string
	out      []string
	errs     []string
}{
	// RFC 5424 section 6.5, examples 1-4.
	{
		name: "rfc5424 example 1 BOM",
		in:   "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - \xEF\xBB\xBF'su root' failed for lonvick on /dev/pts/8",
		out: []string{
			`{"_time":"2003-10-11T22:14:15.003000000Z","_stream":"{}","_msg":"'su root' failed for lonvick on /dev/pts/8","priority":34,"facility":4,"severity":2,"level":"crit","hostname":"mymachine.example.com","app_name":"su","msg_id":"ID47"}`,
		},
	},
	{
		name: "rfc5424 example 2 offset and microseconds",
		in:   "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
		out: []string{
			`{"_time":"2003-08-24T12:14:15.000003000Z","_stream":"{}","_msg":"%% It's time to make the do-nuts.","priority":165,"facility":20,"severity":5,"level":"notice","hostname":"192.0.2.1","app_name":"myproc","proc_id":"8710"}`,
		},
	},
	{
		name: "rfc5424 example 3 structured data",
		in:   `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"] ` + "\xEF\xBB\xBFAn application event log entry...",
		out: []string{
			`{"_time":"2003-10-11T22:14:15.003000000Z","_stream":"{}","_msg":"An application event log entry...","priority":165,"facility":20,"severity":5,"level":"notice","hostname":"mymachine.example.com","app_name":"evntslog","msg_id":"ID47","sd.exampleSDID@32473.iut":"3","sd.exampleSDID@32473.eventSource":"Application","sd.exampleSDID@32473.eventID":"1011"}`,
		},
	},
	{
		name: "rfc5424 example 4 two elements no msg",
		in:   `<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 [exampleSDID@32473 iut="3" eventSource="Application" eventID="1011"][examplePriority@32473 class="high"]`,
		out: []string{
			`{"_time":"2003-10-11T22:14:15.003000000Z","_stream":"{}","_msg":"","priority":165,"facility":20,"severity":5,"level":"notice","hostname":"mymachine.example.com","app_name":"evntslog","msg_id":"ID47","sd.exampleSDID@32473.iut":"3","sd.exampleSDID@32473.eventSource":"Application","sd.exampleSDID@32473.eventID":"1011","sd.examplePriority@32473.class":"high"}`,
		},
	},
	{
		name: "rfc5424 nilvalue everywhere",
		in:   "<0>1 - - - - - -",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","priority":0,"facility":0,"severity":0,"level":"emerg"}`,
		},
	},
	{
		name: "rfc5424 nilvalue everywhere empty msg",
		in:   "<191>1 - - - - - - ",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"","priority":191,"facility":23,"severity":7,"level":"debug"}`,
		},
	},
	{
		name: "rfc5424 element without params",
		in:   `<13>1 - h a - - [timeQuality][origin ip="192.0.2.1" ip="192.0.2.2"] m`,
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"h","app_name":"a","sd.timeQuality":null,"sd.origin.ip":"192.0.2.1","sd.origin.ip":"192.0.2.2"}`,
		},
	},
	{
		name: "rfc5424 escapes",
		in:   `<13>1 - - - - - [x@1 q="say \"hi\"" b="a\\b" c="a]b"] m`,
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","sd.x@1.q":"say \"hi\"","sd.x@1.b":"a\\b","sd.x@1.c":"a]b"}`,
		},
	},
	{
		name: "rfc5424 escapes decoded as the RFC says",
		in:   `<13>1 - - - - - [x@1 r="a\]b" p="C:\new\dir" mixed="\"\]" u="\é\\"] m`,
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","sd.x@1.r":"a]b","sd.x@1.p":"C:\\new\\dir","sd.x@1.mixed":"\"]","sd.x@1.u":"\\é\\"}`,
		},
	},
	{
		name: "rfc5424 empty param value",
		in:   `<13>1 - - - - - [x@1 e=""] m`,
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","sd.x@1.e":""}`,
		},
	},
	{
		name: "rfc5424 bad utf8 in msg and value",
		in:   "<13>1 - h\xff - - - [x@1 v=\"\xfe\"] m\xc3",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"m�","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"h�","sd.x@1.v":"�"}`,
		},
	},
	{
		name: "rfc5424 msg keeps later BOM and spaces",
		in:   "<13>1 - - - - - -   two\xEF\xBB\xBF ",
		out: []string{
			"{\"_time\":\"2026-01-15T12:00:00.000000000Z\",\"_stream\":\"{}\",\"_msg\":\"  two\ufeff \",\"priority\":13,\"facility\":1,\"severity\":5,\"level\":\"notice\"}",
		},
	},
	{
		name: "rfc5424 pri zero padded",
		in:   "<013>1 2026-01-15T08:00:00Z h - - - - m",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"h"}`,
		},
	},
	{
		name: "rfc5424 procid and msgid",
		in:   "<86>1 2026-01-15T08:00:00.123456+01:00 web-1 nginx 4242 access - GET /",
		out: []string{
			`{"_time":"2026-01-15T07:00:00.123456000Z","_stream":"{}","_msg":"GET /","priority":86,"facility":10,"severity":6,"level":"info","hostname":"web-1","app_name":"nginx","proc_id":"4242","msg_id":"access"}`,
		},
	},

	// RFC 3164 / BSD.
	{
		name: "rfc3164 example",
		in:   "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
		out: []string{
			`{"_time":"2025-10-11T22:14:15.000000000Z","_stream":"{}","_msg":"'su root' failed for lonvick on /dev/pts/8","priority":34,"facility":4,"severity":2,"level":"crit","hostname":"mymachine","app_name":"su"}`,
		},
	},
	{
		name: "rfc3164 no pri linux",
		in:   "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4 ",
		out: []string{
			`{"_time":"2025-06-14T15:16:01.000000000Z","_stream":"{}","_msg":"authentication failure; logname= uid=0 euid=0 tty=NODEVssh ruser= rhost=218.188.2.4 ","hostname":"combo","app_name":"sshd(pam_unix)","proc_id":"19939"}`,
		},
	},
	{
		name: "rfc3164 no pri mac padded day",
		in:   "Jul  1 09:00:55 calvisitor-10-105-160-95 kernel[0]: IOThunderboltSwitch<0>(0x0)::listenerCallback - unplug = 0",
		out: []string{
			`{"_time":"2025-07-01T09:00:55.000000000Z","_stream":"{}","_msg":"IOThunderboltSwitch<0>(0x0)::listenerCallback - unplug = 0","hostname":"calvisitor-10-105-160-95","app_name":"kernel","proc_id":"0"}`,
		},
	},
	{
		name: "rfc3164 tag with spaces",
		in:   "Jun 19 04:09:11 combo syslogd 1.4.1: restart.",
		out: []string{
			`{"_time":"2025-06-19T04:09:11.000000000Z","_stream":"{}","_msg":"restart.","hostname":"combo","app_name":"syslogd 1.4.1"}`,
		},
	},
	{
		name: "rfc3164 spaces before tag",
		in:   "Jul  7 08:06:15 combo  -- root[2421]: ROOT LOGIN ON tty2",
		out: []string{
			`{"_time":"2025-07-07T08:06:15.000000000Z","_stream":"{}","_msg":"ROOT LOGIN ON tty2","hostname":"combo","app_name":"-- root","proc_id":"2421"}`,
		},
	},
	{
		name: "rfc3164 mac sender context stays in msg",
		in:   "Jul  1 09:29:02 calvisitor-10-105-160-95 sandboxd[129] ([31211]): deny network-outbound",
		out: []string{
			`{"_time":"2025-07-01T09:29:02.000000000Z","_stream":"{}","_msg":"([31211]): deny network-outbound","hostname":"calvisitor-10-105-160-95","app_name":"sandboxd","proc_id":"129"}`,
		},
	},
	{
		name: "rfc3164 no tag",
		in:   "<13>Jan 15 08:00:00 host -- MARK --",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"-- MARK --","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},
	{
		name: "rfc3164 colon not followed by SP is no tag",
		in:   "<13>Jan 15 08:00:00 host at 10:20:30 it broke",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"at 10:20:30 it broke","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},
	{
		name: "rfc3164 missing hostname",
		in:   "<13>Jan 15 08:00:00 sshd[42]: Accepted publickey",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"Accepted publickey","priority":13,"facility":1,"severity":5,"level":"notice","app_name":"sshd","proc_id":"42"}`,
		},
	},
	{
		name: "rfc3164 missing hostname no pid",
		in:   "<13>Jan 15 08:00:00 cron: job done",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"job done","priority":13,"facility":1,"severity":5,"level":"notice","app_name":"cron"}`,
		},
	},
	{
		name: "rfc3164 tag only",
		in:   "<13>Jan 15 08:00:00 host kernel:",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host","app_name":"kernel"}`,
		},
	},
	{
		name: "rfc3164 hostname only",
		in:   "<13>Jan 15 08:00:00 host",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},
	{
		name: "rfc3164 empty pid",
		in:   "<13>Jan 15 08:00:00 host app[]: m",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host","app_name":"app"}`,
		},
	},
	{
		name: "rfc3164 rfc3339 timestamp",
		in:   "<30>2026-01-15T08:00:00.123456+01:00 web-1 systemd[1]: Started Session 7.",
		out: []string{
			`{"_time":"2026-01-15T07:00:00.123456000Z","_stream":"{}","_msg":"Started Session 7.","priority":30,"facility":3,"severity":6,"level":"info","hostname":"web-1","app_name":"systemd","proc_id":"1"}`,
		},
	},
	{
		name: "rfc3164 year from receive time",
		in:   "Dec 31 23:59:59 h app: last year\nJan 20 00:00:00 h app: near future",
		out: []string{
			`{"_time":"2025-12-31T23:59:59.000000000Z","_stream":"{}","_msg":"last year","hostname":"h","app_name":"app"}`,
			`{"_time":"2026-01-20T00:00:00.000000000Z","_stream":"{}","_msg":"near future","hostname":"h","app_name":"app"}`,
		},
	},
	{
		name: "rfc3164 sentence before colon is no tag",
		in:   "<13>Jan 15 08:00:00 host Out of memory: Kill process 42",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"Out of memory: Kill process 42","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},
	{
		name: "rfc3164 tag too long",
		in:   "<13>Jan 15 08:00:00 host com.example.a.very.long.application.name.that.goes.on[1]: m",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"com.example.a.very.long.application.name.that.goes.on[1]: m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},
	{
		name: "rfc3164 tag of 48 bytes",
		in:   "<13>Jan 15 08:00:00 host com.example.a.very.long.application.name.that.gg[1]: m",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host","app_name":"com.example.a.very.long.application.name.that.gg","proc_id":"1"}`,
		},
	},
	{
		name: "rfc3164 49 bytes before a colon",
		in:   "<13>Jan 15 08:00:00 host com.example.a.very.long.application.name.that.ggg x: m",
		out: []string{
			`{"_time":"2026-01-15T08:00:00.000000000Z","_stream":"{}","_msg":"com.example.a.very.long.application.name.that.ggg x: m","priority":13,"facility":1,"severity":5,"level":"notice","hostname":"host"}`,
		},
	},

	// Rejected lines; the neighbours still parse.
	{name: "bad lines", in: "<192>1 - - - - - -\n" +
		"<13>2 - - - - - -\n" +
		"<13>1\n" +
		"<13>1 2026-01-15 h - - - -\n" +
		"<13>1 - h a p\n" +
		"<13>1 - h a p m\n" +
		"<13>1 - h a p m -x\n" +
		"<13>1 - h  a p m -\n" +
		"<13>1 - h a p m x\n" +
		"<13>1 - h a p m []\n" +
		"<13>1 - h a p m [x\n" +
		"<13>1 - h a p m [x a]\n" +
		"<13>1 - h a p m [x a=b]\n" +
		"<13>1 - h a p m [x a=\"b]\n" +
		"<13>1 - h a p m [x a=\"b\\\"]\n" +
		"<13>1 - h a p m [x a=\"b\"c=\"d\"]\n" +
		"<13>1 - h a p m [x a=\"b\"]x\n" +
		"<13x\n" +
		"<>1 - - - - - -\n" +
		"<1234>1 - - - - - -\n" +
		"<13>hello world\n" +
		"hello world\n" +
		"Jun 14 15:16:01\n" +
		"Jun 14 15:16:01x h a: m\n" +
		"<13>1 - - - - - - still fine\n",
		out: []string{
			`{"_time":"2026-01-15T12:00:00.000000000Z","_stream":"{}","_msg":"still fine","priority":13,"facility":1,"severity":5,"level":"notice"}`,
		},
		errs: []string{
			`1:2: syslog: PRI 192 out of range, expected 0-191`,
			`2:5: syslog: unsupported VERSION "2", expected 1`,
			`3:6: syslog: expected SP after VERSION`,
			`4:7: syslog: invalid TIMESTAMP, expected RFC 3339 or '-'`,
			`5:14: syslog: expected SP after PROCID`,
			`6:16: syslog: expected SP after MSGID`,
			`7:18: syslog: expected SP after STRUCTURED-DATA`,
			`8:11: syslog: expected APP-NAME or '-'`,
			`9:17: syslog: expected '[' or '-' for STRUCTURED-DATA`,
			`10:18: syslog: expected SD-ID after '['`,
			`11:19: syslog: expected ']' to close SD-ELEMENT`,
			`12:21: syslog: expected '=' after PARAM-NAME`,
			`13:22: syslog: expected '"' to open PARAM-VALUE`,
			`14:25: syslog: expected '"' to close PARAM-VALUE`,
			`15:27: syslog: expected '"' to close PARAM-VALUE`,
			`16:25: syslog: expected SP or ']' in SD-ELEMENT`,
			`17:26: syslog: expected SP after STRUCTURED-DATA`,
			`18:4: syslog: expected '>' after 1-3 PRI digits`,
			`19:2: syslog: expected PRI digits after '<'`,
			`20:5: syslog: expected '>' after 1-3 PRI digits`,
			`21:5: syslog: expected VERSION or TIMESTAMP after PRI`,
			`22:1: syslog: expected '<PRI>' or TIMESTAMP`,
			`23:16: syslog: expected SP after TIMESTAMP`,
			`24:1: syslog: expected '<PRI>' or TIMESTAMP`,
		},
	},
}
