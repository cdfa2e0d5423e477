package timestamp_test

import (
	"fmt"
	"time"

	"github.com/sluicelog/sluice/internal/timestamp"
)

func ExampleParsePrefix() {
	received := time.Date(2026, 1, 15, 8, 0, 0, 0, time.UTC).UnixNano()
	for _, line := range []string{
		"2015-10-18 18:01:47,978 INFO [main] org.apache.hadoop.mapreduce.v2.app.MRAppMaster: Created MRAppMaster",
		"Dec 10 06:55:46 LabSZ sshd[24200]: Invalid user webmaster from 173.234.31.186",
		"081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 terminating",
	} {
		ns, n, ok := timestamp.ParsePrefix([]byte(line), received)
		if !ok {
			fmt.Println("no timestamp:", line[:20])
			continue
		}
		fmt.Printf("%s |%s\n", timestamp.AppendRFC3339(nil, ns), line[n:n+15])
	}
	// Output:
	// 2015-10-18T18:01:47.978000000Z | INFO [main] or
	// 2025-12-10T06:55:46.000000000Z | LabSZ sshd[242
	// no timestamp: 081109 203615 148 IN
}

func ExampleParseLayout() {
	ns, n, ok := timestamp.ParseLayout([]byte("081109 203615 148 INFO dfs.DataNode"), timestamp.HDFS, 0)
	fmt.Println(string(timestamp.AppendRFC3339(nil, ns)), n, ok)
	// Output: 2008-11-09T20:36:15.000000000Z 13 true
}

func ExampleParse() {
	for _, v := range []string{"1768464000", "1768464000123", "1768464000.5", "2026-01-15T09:00:00+01:00"} {
		ns, ok := timestamp.Parse([]byte(v), 0)
		fmt.Println(string(timestamp.AppendRFC3339(nil, ns)), ok)
	}
	// Output:
	// 2026-01-15T08:00:00.000000000Z true
	// 2026-01-15T08:00:00.123000000Z true
	// 2026-01-15T08:00:00.500000000Z true
	// 2026-01-15T08:00:00.000000000Z true
}
