// Logs N events through loki4j's Loki4jAppender (logback.xml beside this
// file: the appender's defaults but for the URL, the tenant and a short
// batch timeout), stops logback (the appender sends what is queued) and
// exits 1 if logback reported an error (loki4j reports a failed send as
// one).
//
// Usage: java -Dlogback.configurationFile=logback.xml -DlokiUrl=URL
//   -DlokiTenant=TENANT -cp 'classes:libs/*' Main N
//
// Event i, from the logger "e2e.java" on the thread "main": level WARN
// when i % 10 == 0, else INFO; the MDC trace_id="java-%04d"; the key-value
// pair seq=i; the message `java %04d "quoted" back\slash ünïcode ✓`, with
// two more lines ("  at frame 1", "  at frame 2") when i % 7 == 3.

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.core.status.Status;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

public class Main {
    static String message(int i) {
        String m = String.format("java %04d \"quoted\" back\\slash ünïcode ✓", i);
        if (i % 7 == 3) {
            m += "\n  at frame 1\n  at frame 2";
        }
        return m;
    }

    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        Logger log = LoggerFactory.getLogger("e2e.java");
        for (int i = 0; i < n; i++) {
            MDC.put("trace_id", String.format("java-%04d", i));
            if (i % 10 == 0) {
                log.atWarn().addKeyValue("seq", i).log(message(i));
            } else {
                log.atInfo().addKeyValue("seq", i).log(message(i));
            }
            MDC.remove("trace_id");
        }
        LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
        ctx.stop(); // the appender drains its queue
        int errors = 0;
        for (Status s : ctx.getStatusManager().getCopyOfStatusList()) {
            if (s.getLevel() >= Status.ERROR) {
                System.err.println(s);
                errors++;
            }
        }
        if (errors > 0) {
            System.err.println(errors + " errors from logback");
            System.exit(1);
        }
        System.out.println("sent " + n);
    }
}
