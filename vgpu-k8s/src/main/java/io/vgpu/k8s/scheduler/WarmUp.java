package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.http.HttpClient;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import io.vgpu.api.Device;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.ResourceSchema;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.CandidateNodes;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.DeviceRegistrar;
import io.vgpu.core.Engine;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.Placement;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.config.DeviceConfig;
import io.vgpu.k8s.grant.GrantKey;
import io.vgpu.k8s.grant.GrantSignature;
import io.vgpu.k8s.pod.PodRequestParser;
import io.vgpu.k8s.server.HttpService;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingArgs;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderBindingResult;
import io.vgpu.k8s.scheduler.ExtenderApi.ExtenderFilterResult;
import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import javax.net.ssl.X509KeyManager;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * The scheduler's request path run on made-up pods and nodes before it serves, so that the JIT has
 * compiled it when the first pods arrive: a cold JVM spends about half of its CPU in a first burst
 * compiling, and interprets the rest meanwhile.
 *
 * <p>Each round decodes a pod's watch events at each stage an informer sees it in, reads a filter
 * request as kube-scheduler sends it (with the reader the extender uses), parses and compiles the pod's
 * request, filters and reserves on a private engine of a few nodes (which holds up to {@value
 * #HELD_AT_MOST} of the pods it placed, so that its cards are partly used), writes the decision patch
 * and the answer (or, one round in ten, the refusal), reads a bind request, writes the Binding, and
 * decodes a node's watch event. The pods and nodes are shaped as an API server sends them ({@link
 * WarmUpObjects} says why that matters). Nothing of the scheduler's state is touched: the
 * engine, the readers and the ledger-shaped decoder are this object's own. With a client, one round in
 * ten also reads {@code /version} from the API server through the client's HTTP client, the one the
 * scheduler's writes use: a read that any client may make and that changes nothing. Over the loopback,
 * the writes of every round (every second one on a JVM with an AOT cache, {@link
 * WarmUpRounds#roundsPerWritingRound}) and of every refused one (the decision patch, the FilteringSucceed
 * Event, the node lock and the Binding, or the FilteringFailed Event) are sent as the scheduler sends
 * them, to a private listener that only answers ({@link LoopbackApi}), and the watch events go out on
 * that listener's WebSocket watches to a private {@link ClusterLedger} on the warm-up's engine instead of
 * being decoded in-process, so that fabric8's watches, the informers and the ledger's handlers are
 * warmed as well. After the rounds it waits, within its budget, for the JIT to compile what they queued.
 */
final class WarmUp {
  private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);
  private static final int NODES = 16;
  /**
   * Fitting nodes the filter's answer lists: the extender lists 20, more than this engine has, and a
   * limit never reached is compiled as a trap, which the first scan where more than 20 nodes fit springs
   * (a deoptimization and a recompile of the engine's scan, its hottest method). Fewer than the nodes,
   * so that the limit is reached here too.
   */
  private static final int LISTED = NODES / 2;
  private static final int CARDS_PER_NODE = 8;
  private static final long CARD_MEMORY_MIB = 81_920;
  private static final int ROUNDS_PER_API_READ = 10;
  private static final Duration API_READ_TIMEOUT = Duration.ofSeconds(5);
  private static final int ROUNDS_PER_REFUSAL = 10;
  /** The longest wait after the rounds for the JIT to compile what they queued (within the budget). */
  private static final Duration COMPILER_WAIT = Duration.ofSeconds(5);
  private static final long COMPILER_POLL_MILLIS = 200;
  /**
   * How many placed pods the engine holds at most before the older half is given back. An engine whose
   * cards are always empty compiles a scan that has only seen equal scores and free cores; a cluster's
   * first pods then send it back to the interpreter (cards that differ, cores used up, a card refused
   * for compute) and it is compiled again while pods wait. Holding pods leaves cards used unevenly,
   * some with their compute used up; with this the scan was no longer compiled again in a first burst.
   */
  private static final int HELD_AT_MOST = 128;
  /** How long the private ledger's informers may take to list and open their watches on the loopback. */
  private static final Duration WATCH_SYNC_TIMEOUT = Duration.ofSeconds(10);
  /** The private ledger's window for a node's device report, as the scheduler's. */
  private static final Duration NODE_REPORT_WINDOW = Duration.ofSeconds(60);
  /** The private ledger's reservation timeout: longer than any warm-up, so none is reaped during one. */
  private static final Duration RESERVATION_TIMEOUT = Duration.ofMinutes(5);
  private static final List<WarmUpObjects.Stage> LATER_STAGES = List.of(WarmUpObjects.Stage.BOUND, WarmUpObjects.Stage.RUNNING);
  private static final List<WarmUpObjects.Stage> LATER_STAGES_TO_DELETION = List.of(WarmUpObjects.Stage.BOUND, WarmUpObjects.Stage.RUNNING, WarmUpObjects.Stage.DELETING);

  /**
   * What a warm-up did.
   *
   * @param rounds rounds run through the request path
   * @param placed rounds whose pod was placed, reserved and bound (all but the refused one in ten,
   *     unless the device configuration leaves made-up A100s unusable); all are given back when the
   *     warm-up ends
   * @param apiReads reads of {@code /version} answered (any status)
   * @param overLoopback whether the rounds' filter and bind calls went over the loopback listener
   * @param writes writes answered by the loopback's API listener (none in-process, or where it could not
   *     be started)
   * @param podEvents pod watch events that a private ledger's informer received over the loopback API's
   *     watch and handled (none in-process, or where its informers could not sync)
   * @param signed placed rounds whose decision carried a grant signature (each placed one when the
   *     warm-up signs, else none)
   * @param compilerSettled how long it waited after the rounds for the JIT to compile what they
   *     queued (part of {@code took})
   * @param took how long it ran
   */
  record Outcome(int rounds, int placed, int apiReads, boolean overLoopback, int writes, int podEvents, int signed, Duration compilerSettled, Duration took) {}

  private final JsonMapper json;
  /** Signs the decisions when the scheduler signs its own; with a key of the warm-up's. */
  private final @Nullable GrantSignature signer;
  /** Decisions written with a signature; the filter runs on the loopback listener's threads. */
  private final AtomicInteger signed = new AtomicInteger();
  private final ResourceSchema schema;
  private final Engine engine;
  private final PodRequestParser requests;
  private final ExtenderArgsReader filterArgs;
  private final KubernetesSerialization watchEvents;
  private final WarmUpObjects objects;
  private final List<String> nodeNames = new ArrayList<>();
  private final List<String> nodeEvents = new ArrayList<>();
  /** The texts of the four kinds of pod the rounds take turns with. */
  private final List<WarmUpObjects.PodTexts> podTexts = new ArrayList<>();
  private final @Nullable KubernetesClient client;
  /** The pods the filter reserved, by UID, until their round gives them back. */
  private final Map<String, Reserved> reserved = new ConcurrentHashMap<>();
  private volatile @Nullable CandidateNodes lastCandidates;
  /** One round in this many sends its writes (and every refused round). */
  private final int roundsPerWritingRound = WarmUpRounds.roundsPerWritingRound();
  /** The writes of the rounds, while a {@link LoopbackApi} answers them. */
  private volatile @Nullable ApiWrites writes;
  /** Whether the current round sends its writes. */
  private volatile boolean roundWrites;
  private volatile @Nullable EventRecorder events;
  /** The decision patch of the round's placed pod, which its bind waits for as the extender's does. */
  private volatile @Nullable CompletableFuture<Void> decisionWritten;
  /** The made-up resource version each lock patch is conditional on. */
  private final AtomicInteger lockVersion = new AtomicInteger();
  /** Pods placed and bound whose reservations the engine still holds, oldest first. */
  private final ArrayDeque<Held> held = new ArrayDeque<>();
  /** The loopback API whose watches the rounds' watch events go to, while a private ledger follows them. */
  private volatile @Nullable LoopbackApi watched;
  /** The private ledger that follows {@link #watched}, on this warm-up's engine. */
  private volatile @Nullable ClusterLedger following;
  /** Whether the private ledger once fell {@link #WATCH_SYNC_TIMEOUT} behind the events sent to it. */
  private volatile boolean ledgerStalled;
  /** Pod watch events sent on the loopback API's watches. */
  private final AtomicInteger podEventsSent = new AtomicInteger();
  /** Pod watch events the private ledger's pod informer has handled. */
  private final AtomicInteger podEventsHandled = new AtomicInteger();

  /**
   * A pod the engine holds, and its deletion as the watch sends it when the pod is given back (null
   * where its round deleted it already, or nothing follows the watches).
   */
  private record Held(PodRef pod, @Nullable String deletion) {}

  /** A pod the warm-up's filter placed: its reference, node and the decision the scheduler would write. */
  private record Reserved(PodRef pod, String node, Map<String, String> decision) {}

  /**
   * A warm-up of the request path under {@code config}; {@code client}, if any, is the scheduler's. Its
   * decisions are not signed.
   *
   * @param json the mapper the extender reads and answers with
   */
  WarmUp(DeviceConfig config, JsonMapper json, @Nullable KubernetesClient client) {
    this(config, json, client, false);
  }

  /**
   * As {@link #WarmUp(DeviceConfig, JsonMapper, KubernetesClient)}; with {@code signsGrants} its
   * decisions are signed as the scheduler's are, with a key of its own made for the warm-up and
   * forgotten after it, so that the signing is compiled with the rest rather than left as a trap that
   * the first real pod springs.
   */
  WarmUp(DeviceConfig config, JsonMapper json, @Nullable KubernetesClient client, boolean signsGrants) {
    this.signer = signsGrants ? new GrantSignature(GrantKey.random()) : null;
    this.json = json;
    this.schema = config.schema();
    this.client = client;
    this.engine = Engine.builder().config(config.engineConfig()).build();
    this.requests = new PodRequestParser(schema);
    this.filterArgs = new ExtenderArgsReader(json);
    this.objects = new WarmUpObjects(json, schema);
    this.watchEvents = LeanDecoding.serialization(LeanReader.forCache(LeanStore.podResources(schema), (key, annotation, length) -> {}));
    DeviceRegistrar registrar = new DeviceRegistrar(schema.vendor());
    for (int n = 0; n < NODES; n++) {
      String name = String.format(Locale.ROOT, "warm-up-node-%02d", n);
      List<Device> cards = new ArrayList<>();
      for (int c = 0; c < CARDS_PER_NODE; c++) {
        cards.add(new Device(String.format(Locale.ROOT, "GPU-%08x-0000-4000-8000-%012x", n, c), c, "NVIDIA A100-SXM4-80GB", CARD_MEMORY_MIB, c / 4, true,
            String.format(Locale.ROOT, "00000000:%02X:00.0", 0x07 + c * 8)));
      }
      List<SchedulableDevice> registered = registrar.register(cards, config.sharing());
      engine.upsertNode(new NodeDevices(name, registered, Set.of()));
      nodeNames.add(name);
      nodeEvents.add(objects.nodeEvent(name, NodeRegisterCodec.encode(registered), n, CARDS_PER_NODE));
    }
    for (int variant = 0; variant < 4; variant++) {
      podTexts.add(objects.texts(variant, nodeNames));
    }
  }

  /**
   * Runs up to {@code rounds} rounds in this thread, stopping early once {@code budget} has passed;
   * reads of the API server stop at the first that fails (the rounds go on without them).
   */
  Outcome run(int rounds, Duration budget) {
    return run(rounds, budget, this::inProcess, false, null);
  }

  /**
   * As {@link #run(int, Duration)}, with each round's filter and bind calls sent over the loopback
   * address to a private listener built as the extender's ({@code keys}: its certificate, if it serves
   * HTTPS), so that Jetty, TLS and the routes are warmed as well, and with each round's writes sent to
   * a private {@link LoopbackApi} (over TLS with the same certificate). The rounds' watch events go out
   * on that API's watches, to a private {@link ClusterLedger} on this warm-up's engine, so that fabric8's
   * watches, the informers' lean stores and the ledger's handlers are warmed as the scheduler runs them.
   * Where the extender's listener cannot be started, the rounds run in this thread; where the API's
   * cannot, they run without writes; where the private ledger cannot sync, the watch events are decoded
   * in this thread.
   */
  Outcome runOverLoopback(int rounds, Duration budget, @Nullable X509KeyManager keys) {
    HttpService.Builder routes = HttpService.builder(LoopbackExtender.address()).name("warm-up").threads(2)
        .routeInline("POST", "/filter", null, r -> HttpService.Inline.answer(HttpService.Response.json(200, filter(r.body()))))
        .routeAsync("POST", "/bind", null, r -> CompletableFuture.completedFuture(HttpService.Response.json(200, bind(r.body()))));
    LoopbackExtender wire;
    try {
      wire = LoopbackExtender.start(routes, keys);
    } catch (IOException e) {
      LOG.info("warm-up: no loopback listener ({}); the rounds run in-process", HttpService.oneLine(e.getMessage()));
      return run(rounds, budget);
    }
    LoopbackApi api = null;
    ClusterLedger ledger = null;
    try {
      api = LoopbackApi.start(keys, Map.of(LoopbackApi.NODES, nodeObjects()));
      writes = new ApiWrites(api.client());
      EventRecorder recorder = new EventRecorder(api.client(), "vgpu-scheduler", Clock.systemUTC());
      events = recorder;
      ledger = follow(api, recorder);
    } catch (IOException e) {
      LOG.info("warm-up: no loopback API listener ({}); the rounds run without writes", HttpService.oneLine(e.getMessage()));
    }
    try (wire) {
      return run(rounds, budget, wire::post, true, api);
    } finally {
      watched = null;
      following = null;
      if (ledger != null) {
        ledger.close();
      }
      stopWriting();
      if (api != null) {
        api.close();
      }
    }
  }

  /**
   * Starts a private ledger that lists and watches {@code api} as the scheduler's ledger lists and
   * watches the cluster; null, with the reason logged, where its informers do not sync in time.
   */
  private @Nullable ClusterLedger follow(LoopbackApi api, EventRecorder recorder) {
    Clock clock = Clock.systemUTC();
    // On this warm-up's engine, as the scheduler's ledger is on the scheduler's: the ledger registers the
    // listed nodes (the same as the engine's), and finds the reservations the filter makes as its own.
    ClusterLedger ledger = new ClusterLedger(api.client(), engine, node -> true, new NodeHealth(schema.countResource(), clock, NODE_REPORT_WINDOW), recorder, clock,
        RESERVATION_TIMEOUT).source("the warm-up's loopback API");
    try {
      ledger.start(WATCH_SYNC_TIMEOUT);
      ledger.addPodEventHandler(new ReconcileOnEvent<Pod>(pod -> podEventsHandled.incrementAndGet()));
      long deadline = System.nanoTime() + WATCH_SYNC_TIMEOUT.toNanos();
      while (api.watching(LoopbackApi.PODS) == 0 || api.watching(LoopbackApi.NODES) == 0) {
        if (System.nanoTime() - deadline > 0) {
          throw new IllegalStateException("the informers' watches did not open within " + WATCH_SYNC_TIMEOUT);
        }
        Thread.sleep(5);
      }
    } catch (RuntimeException e) {
      ledger.close();
      LOG.info("warm-up: no private ledger on the loopback API ({}); the watch events are decoded in-process", HttpService.oneLine(e.getMessage()));
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      ledger.close();
      return null;
    }
    watched = api;
    ledgerStalled = false;
    following = ledger;
    return ledger;
  }

  /** The made-up nodes as the API server lists them: each node event's object. */
  private List<String> nodeObjects() {
    List<String> objects = new ArrayList<>();
    for (String event : nodeEvents) {
      objects.add(json.readTree(event).get("object").toString());
    }
    return objects;
  }

  /**
   * A pod's watch event: sent on the loopback API's pod watches while a private ledger follows them,
   * else decoded here as the informers decode it.
   */
  private void podEvent(String event) {
    LoopbackApi api = watched;
    if (api != null) {
      podEventsSent.incrementAndGet();
      api.emit(LoopbackApi.PODS, event);
    } else {
      watchEvents.unmarshal(event, WatchEvent.class);
    }
  }

  /** As {@link #podEvent}, for a node's watch event. */
  private void nodeEvent(String event) {
    LoopbackApi api = watched;
    if (api != null) {
      api.emit(LoopbackApi.NODES, event);
    } else {
      watchEvents.unmarshal(event, WatchEvent.class);
    }
  }

  private Outcome run(int rounds, Duration budget, Calls calls, boolean overLoopback, @Nullable LoopbackApi api) {
    long start = System.nanoTime();
    long deadline = start + budget.toNanos();
    int done = 0;
    int placed = 0;
    int reads = 0;
    boolean reading = client != null;
    try {
      for (; done < rounds && System.nanoTime() - deadline < 0; done++) {
        placed += round(done, calls) ? 1 : 0;
        if (reading && done % ROUNDS_PER_API_READ == 0) {
          reading = readVersion();
          reads += reading ? 1 : 0;
        }
      }
    } catch (IOException e) {
      // Only the loopback's calls can fail this way: the warm-up ends, the scheduler starts as it would.
      LOG.info("warm-up: ended after {} rounds: {}", done, HttpService.oneLine(e.getMessage()));
    } finally {
      giveBack(0);
      awaitLedgerCaughtUp();
    }
    Duration settled = awaitCompilerQuiet(Math.min(COMPILER_WAIT.toNanos(), Math.max(0, deadline - System.nanoTime())));
    podEventsSent.set(0);
    Outcome outcome = new Outcome(done, placed, reads, overLoopback, api == null ? 0 : api.writes(), podEventsHandled.getAndSet(0), signed.getAndSet(0), settled,
        Duration.ofNanos(System.nanoTime() - start));
    LOG.info("warmed up the request path{}: {} rounds ({} placed, {} signed), {} API reads, {} writes, {} pod watch events, then {} ms for the JIT to settle, in {} ms",
        overLoopback ? " over the loopback" : "", outcome.rounds(), outcome.placed(), outcome.signed(), outcome.apiReads(), outcome.writes(), outcome.podEvents(),
        settled.toMillis(), outcome.took().toMillis());
    return outcome;
  }

  /** How a round's filter and bind reach this warm-up's handlers: in-process or over the loopback. */
  @FunctionalInterface
  private interface Calls {
    byte[] post(String path, byte[] body) throws IOException;
  }

  private byte[] inProcess(String path, byte[] body) {
    return path.equals("/filter") ? filter(body) : bind(body);
  }

  /**
   * One pod through the informers' decoding at each of its stages, the filter and the bind; its
   * reservation is given back. One round in {@value #ROUNDS_PER_REFUSAL} asks for more memory than a
   * card holds, so that the filter's refusal (its failed nodes and their reasons) is warmed as well.
   *
   * @return whether the pod was placed
   */
  private boolean round(int i, Calls calls) throws IOException {
    String uid = "00000000-0000-4000-8000-" + Long.toHexString(0x1000000000000L + i).substring(1);
    boolean refused = i % ROUNDS_PER_REFUSAL == ROUNDS_PER_REFUSAL - 1;
    WarmUpObjects.PodTexts pod = podTexts.get(i % podTexts.size());
    String namespace = refused ? WarmUpObjects.REFUSED_NAMESPACE : WarmUpObjects.NAMESPACE;
    roundWrites = i % roundsPerWritingRound == 0 || refused;
    Map<String, String> values = WarmUpObjects.values(i, namespace, uid, 1 + i % 2, refused ? 2 * CARD_MEMORY_MIB : 1024L * (1 + i % 16), 5 * (i % 11));
    podEvent(pod.event("ADDED", WarmUpObjects.Stage.PENDING, values));
    // The answers are not read: the scheduler never reads one, and the reservation says what happened.
    calls.post("/filter", pod.filterRequest(values));
    Reserved reserved = this.reserved.remove(uid);
    if (reserved != null) {
      objects.placed(values, reserved.node(), reserved.decision());
      podEvent(pod.event("MODIFIED", WarmUpObjects.Stage.DECIDED, values));
      awaitDecision();
      calls.post("/bind", bindRequest(values.get("NAME"), namespace, uid, reserved.node()));
      for (WarmUpObjects.Stage stage : i % 4 == 0 ? LATER_STAGES_TO_DELETION : LATER_STAGES) {
        podEvent(pod.event("MODIFIED", stage, values));
      }
      boolean deleted = i % 4 == 0;
      if (deleted) {
        podEvent(pod.event("DELETED", WarmUpObjects.Stage.DELETING, values));
      }
      // A pod the watch still shows is deleted there when the engine gives it back, so that the private
      // ledger holds what this engine holds rather than every pod of the warm-up.
      held.addLast(new Held(reserved.pod(), deleted || watched == null ? null : pod.event("DELETED", WarmUpObjects.Stage.DELETING, values)));
      if (held.size() > HELD_AT_MOST) {
        giveBack(HELD_AT_MOST / 2);
      }
    }
    nodeEvent(nodeEvents.get(i % nodeEvents.size()));
    return reserved != null;
  }

  /**
   * Waits up to {@code maxNanos} for the JIT to go quiet: for less than a tenth of one compiler thread's
   * time to go into compiling over a {@value #COMPILER_POLL_MILLIS} ms poll. On two cores the one C2
   * thread is still working through what the rounds queued when they end; whatever is left of its queue
   * would otherwise be compiled while the first pods wait.
   *
   * @return how long it waited
   */
  private static Duration awaitCompilerQuiet(long maxNanos) {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    long start = System.nanoTime();
    if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
      return Duration.ZERO;
    }
    long compiled = jit.getTotalCompilationTime();
    while (System.nanoTime() - start < maxNanos) {
      try {
        Thread.sleep(COMPILER_POLL_MILLIS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      long now = jit.getTotalCompilationTime();
      if (now - compiled < COMPILER_POLL_MILLIS / 10) {
        break;
      }
      compiled = now;
    }
    return Duration.ofNanos(System.nanoTime() - start);
  }

  /**
   * Waits, up to {@link #WATCH_SYNC_TIMEOUT}, for the private ledger to handle every pod event sent: the
   * last pods' deletions release on the engine what their earlier events may have restored there.
   */
  private void awaitLedgerCaughtUp() {
    if (following == null || ledgerStalled) {
      return;
    }
    long deadline = System.nanoTime() + WATCH_SYNC_TIMEOUT.toNanos();
    while (podEventsHandled.get() < podEventsSent.get()) {
      if (System.nanoTime() - deadline >= 0) {
        // A watch that stopped delivering would make every later give-back wait as long.
        ledgerStalled = true;
        LOG.info("warm-up: the private ledger handled {} of {} pod events within {}; the rounds no longer wait for it", podEventsHandled.get(), podEventsSent.get(),
            WATCH_SYNC_TIMEOUT);
        return;
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Waits for the round's decision patch, as the extender's bind does before it binds. */
  private void awaitDecision() {
    CompletableFuture<Void> written = decisionWritten;
    decisionWritten = null;
    if (written != null) {
      try {
        written.join();
      } catch (RuntimeException e) {
        writeFailed(e);
      }
    }
  }

  /**
   * Sends {@code write} through the loopback API's client, if there is one; a failure ends the writes,
   * not the warm-up.
   */
  private void write(Consumer<ApiWrites> write) {
    ApiWrites w = writes;
    if (w == null || !roundWrites) {
      return;
    }
    try {
      write.accept(w);
    } catch (RuntimeException e) {
      writeFailed(e);
    }
  }

  /** Records {@code event} through the loopback API's recorder, if there is one and the round writes. */
  private void record(Consumer<EventRecorder> event) {
    EventRecorder r = events;
    if (r != null && roundWrites) {
      event.accept(r);
    }
  }

  private void writeFailed(RuntimeException e) {
    stopWriting();
    LOG.info("warm-up: a write to the loopback API failed, the rounds go on without writes: {}", HttpService.oneLine(e.getMessage()));
  }

  private void stopWriting() {
    writes = null;
    EventRecorder recorder = events;
    events = null;
    if (recorder != null) {
      recorder.close();
    }
  }

  /** How many pods this warm-up's private engine holds: none once a run has ended. */
  int podsHeld() {
    return engine.grants().size();
  }

  /**
   * Gives back the oldest held pods' reservations until {@code keep} are held. The private ledger is let
   * catch up first: a pod given back before the ledger saw its decision would be seen decided with no
   * reservation behind it, and its grant reported ignored.
   */
  private void giveBack(int keep) {
    awaitLedgerCaughtUp();
    while (held.size() > keep) {
      Held pod = held.removeFirst();
      engine.release(pod.pod());
      if (pod.deletion() != null && watched != null) {
        podEvent(pod.deletion());
      }
    }
  }

  /** The filter as the extender's route runs it, on this warm-up's engine: a placed pod stays reserved for its round. */
  private byte[] filter(byte[] body) {
    ExtenderArgs args = filterArgs.read(body);
    if (args.pod() == null) {
      throw new IllegalStateException("the warm-up's filter request lost its pod");
    }
    PodRequest request = requests.parse(args.pod());
    CompiledRequest compiled = engine.compile(request);
    String uid = args.pod().getMetadata().getUid();
    ClusterLedger ledger = following;
    if (ledger != null) {
      ledger.filtering(request.pod(), uid);
    }
    CandidateNodes candidates = engine.candidates(args.nodeNames() == null ? List.of() : args.nodeNames(), lastCandidates);
    lastCandidates = candidates;
    FilterResult result = Extender.filterForAnswer(engine, compiled, candidates, LISTED);
    ExtenderFilterResult answer;
    if (result.placement().isPresent() && engine.reserve(result.placement().get()).reserved()) {
      Placement placement = result.placement().get();
      PodGrant grant = placement.grant();
      String assigned = Long.toString(1_700_000_000L + reserved.size());
      String patch = Extender.decisionPatch(grant, assigned, signer, uid);
      write(w -> decisionWritten = w.patchPodAsync(LoopbackApi.NAMESPACE, LoopbackApi.POD, patch));
      String message = Extender.successMessage(nodeNames.size(), placement.node(), result.fitting(), result.fittingCount());
      record(r -> r.normal(args.pod(), "FilteringSucceed", message));
      Map<String, String> decision = Extender.annotations(grant, assigned, signer, uid);
      if (decision.containsKey(GrantSignature.ANNOTATION)) {
        signed.incrementAndGet();
      }
      reserved.put(uid, new Reserved(request.pod(), placement.node(), decision));
      answer = new ExtenderFilterResult(null, List.of(placement.node()), null, null, "");
    } else {
      Map<String, String> failed = Extender.failedNodes(result.rejections());
      record(r -> r.warning(args.pod(), "FilteringFailed", "no node fits: " + failed.size() + " refused"));
      answer = new ExtenderFilterResult(null, null, failed, null, "");
    }
    return json.writeValueAsBytes(answer);
  }

  /** The bind as the extender's route reads it and writes its Binding (here, to nowhere). */
  private byte[] bind(byte[] body) {
    ExtenderBindingArgs bind = json.readValue(body, ExtenderBindingArgs.class);
    PodRef ref = new PodRef(String.valueOf(bind.podNamespace()), String.valueOf(bind.podName()));
    String lock = NodeLock.lockPatch(Integer.toString(lockVersion.incrementAndGet()), NodeLockCodec.encode(Instant.now(), ref.namespace(), ref.name()));
    write(w -> w.patchNode(LoopbackApi.NODE, lock));
    String binding = Extender.bindingJson(ref, bind.podUid(), String.valueOf(bind.node()), Map.of(HamiAnnotations.BIND_PHASE, "allocating"));
    write(w -> w.create(LoopbackApi.NAMESPACE, "bindings", binding));
    return json.writeValueAsBytes(ExtenderBindingResult.OK);
  }

  /** A read of the API server's {@code /version}; false when it could not be made. */
  private boolean readVersion() {
    KubernetesClient c = client;
    if (c == null) {
      return false;
    }
    try {
      HttpClient http = c.getHttpClient();
      String master = c.getMasterUrl().toString();
      HttpRequest request = http.newHttpRequestBuilder().uri((master.endsWith("/") ? master : master + "/") + "version").build();
      http.sendAsync(request, byte[].class).get(API_READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      LOG.debug("warm-up: reading /version failed, going on without the API server: {}", e.toString());
      return false;
    }
  }

  /** kube-scheduler's bind request; the names and the UID are the warm-up's own, with nothing to escape. */
  private static byte[] bindRequest(String name, String namespace, String uid, String node) {
    return ("{\"PodName\":\"" + name + "\",\"PodNamespace\":\"" + namespace + "\",\"PodUID\":\"" + uid + "\",\"Node\":\"" + node + "\"}").getBytes(StandardCharsets.UTF_8);
  }
}
