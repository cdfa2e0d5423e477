// Package kafkatest starts a private one-node Apache Kafka broker (KRaft:
// broker and controller in one JVM) for tests: a temporary directory, free
// ports on 127.0.0.1, stopped by its PID. scripts/e2e-setup.sh copies the
// broker's jars from Maven Central into
// ${SLUICE_E2E_DIR:-~/.cache/sluice-e2e}/kafka-VERSION/libs.
//
// Without the jars (or java) a test is skipped with a message saying so,
// unless CI=true: then it fails.
package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Version is the Kafka release scripts/e2e-setup.sh installs.
const Version = "4.1.0"

// LibDir returns where scripts/e2e-setup.sh puts the broker's jars.
func LibDir() string {
	dir := os.Getenv("SLUICE_E2E_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "sluice-e2e")
	}
	return filepath.Join(dir, "kafka-"+Version, "libs")
}

// Broker is a running test broker.
//
// Concurrency: its methods are for the test's goroutine.
type Broker struct {
	t    testing.TB
	dir  string // holds server.properties, data/ and server.log
	libs string
	Port int // the PLAINTEXT listener's
	cmd  *exec.Cmd
	exit chan struct{} // closed when cmd has exited
}

// Start formats and starts a broker for t and stops it when t ends.
func Start(t testing.TB) *Broker {
	t.Helper()
	libs := LibDir()
	_, jarErr := os.Stat(filepath.Join(libs, "kafka_2.13-"+Version+".jar"))
	_, javaErr := exec.LookPath("java")
	if jarErr != nil || javaErr != nil {
		msg := fmt.Sprintf("Apache Kafka %s is not installed (%v; java: %v); scripts/e2e-setup.sh installs it", Version, jarErr, javaErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "sluice-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{t: t, dir: dir, libs: libs}
	t.Cleanup(func() {
		b.Stop()
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("kafka broker's directory kept: %s", dir)
		}
	})
	b.Port = freePort(t)
	cport := freePort(t)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
`, b.Port, cport, filepath.Join(dir, "data"))
	if err := os.WriteFile(b.path("server.properties"), []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	log4j := fmt.Sprintf(`status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = %s
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%%d] %%p %%m (%%c)%%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
`, b.path("server.log"))
	if err := os.WriteFile(b.path("log4j2.properties"), []byte(log4j), 0o644); err != nil {
		t.Fatal(err)
	}
	uuid, err := b.java("kafka.tools.StorageTool", "random-uuid")
	if err != nil {
		t.Fatalf("kafka StorageTool random-uuid: %v\n%s", err, uuid)
	}
	if out, err := b.java("kafka.tools.StorageTool", "format", "-t", strings.TrimSpace(string(uuid)), "-c", b.path("server.properties")); err != nil {
		t.Fatalf("kafka StorageTool format: %v\n%s", err, out)
	}
	b.Start()
	return b
}

func (b *Broker) path(name string) string { return filepath.Join(b.dir, name) }

// Addr returns the broker's address, host:port.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.Port) }

func (b *Broker) javaArgs(main string, args ...string) []string {
	return append([]string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=" + b.path("log4j2.properties"), "-cp", filepath.Join(b.libs, "*"), main}, args...)
}

func (b *Broker) java(main string, args ...string) ([]byte, error) {
	cmd := exec.Command("java", b.javaArgs(main, args...)...)
	cmd.Dir = b.dir
	return cmd.CombinedOutput()
}

// Start starts the broker (again, after Stop or Kill) and waits until
// its log says "Kafka Server started".
func (b *Broker) Start() {
	b.t.Helper()
	if b.cmd != nil {
		b.t.Fatal("kafkatest: Start of a running broker")
	}
	// The log of this run only: a restart must not see the last one's
	// "started".
	logPath := b.path("server.log")
	var from int64
	if fi, err := os.Stat(logPath); err == nil {
		from = fi.Size()
	}
	out, err := os.OpenFile(b.path("stdout.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.Command("java", b.javaArgs("kafka.Kafka", b.path("server.properties"))...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = b.dir, out, out
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start kafka: %v", err)
	}
	b.cmd, b.exit = cmd, make(chan struct{})
	go func(exit chan struct{}) { cmd.Wait(); close(exit) }(b.exit)
	for i := 0; ; i++ {
		if data, err := os.ReadFile(logPath); err == nil && int64(len(data)) > from &&
			bytes.Contains(data[from:], []byte("Kafka Server started")) {
			return
		}
		select {
		case <-b.exit:
			b.cmd = nil
			b.t.Fatalf("kafka exited before it started: %v\n%s", cmd.ProcessState, b.tail())
		default:
		}
		if i > 1200 {
			b.t.Fatalf("kafka did not start in two minutes\n%s", b.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tail returns the end of the broker's logs, for a failure message.
func (b *Broker) tail() string {
	var s string
	for _, name := range []string{"stdout.log", "server.log"} {
		data, _ := os.ReadFile(b.path(name))
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		s += "--- " + name + "\n" + string(data)
	}
	return s
}

// Stop stops the broker by its PID (SIGTERM: a controlled shutdown) and
// waits for it to exit.
func (b *Broker) Stop() { b.signal(syscall.SIGTERM) }

// Kill kills the broker with SIGKILL and waits for it to exit.
func (b *Broker) Kill() { b.signal(syscall.SIGKILL) }

func (b *Broker) signal(sig syscall.Signal) {
	if b.cmd == nil {
		return
	}
	if err := b.cmd.Process.Signal(sig); err != nil {
		b.t.Logf("signal kafka (pid %d): %v", b.cmd.Process.Pid, err)
	}
	select {
	case <-b.exit:
	case <-time.After(time.Minute):
		b.t.Errorf("kafka (pid %d) still runs a minute after %v; killing it", b.cmd.Process.Pid, sig)
		b.cmd.Process.Kill()
		<-b.exit
	}
	b.cmd = nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Record is a committed record read back from a topic.
type Record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   map[string]string
}

// CreateTopic creates topic with partitions and the topic configs given
// as name, value pairs.
func (b *Broker) CreateTopic(topic string, partitions int32, configs ...string) {
	b.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		b.t.Fatal(err)
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for i := 0; i+1 < len(configs); i += 2 {
		cfg[configs[i]] = &configs[i+1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, cfg, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		b.t.Fatalf("create topic %q: %v", topic, err)
	}
}

// Committed reads every committed record of topic (read_committed, up
// to each partition's last stable offset as it is when called).
func Committed(t testing.TB, addr, topic string) []Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ends, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list the committed offsets of %q: %v", topic, err)
	}
	starts, err := kadm.NewClient(adm).ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("list the start offsets of %q: %v", topic, err)
	}
	offs := map[int32]kgo.Offset{}
	end := map[int32]int64{}
	for p, o := range ends[topic] {
		s, _ := starts.Lookup(topic, p)
		if o.Offset > s.Offset {
			offs[p] = kgo.NewOffset().At(s.Offset)
			end[p] = o.Offset
		}
	}
	var out []Record
	if len(end) == 0 {
		return out
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for len(end) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back topic %q: %v (partitions left: %v)", topic, ctx.Err(), end)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("read back topic %q, partition %d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			e, ok := end[r.Partition]
			if !ok {
				return
			}
			if !r.Attrs.IsControl() {
				h := map[string]string{}
				for _, kv := range r.Headers {
					h[kv.Key] = string(kv.Value)
				}
				out = append(out, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Headers: h})
			}
			if r.Offset >= e-1 {
				delete(end, r.Partition)
			}
		})
	}
	return out
}
