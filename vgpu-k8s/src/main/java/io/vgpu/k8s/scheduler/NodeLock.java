package io.vgpu.k8s.scheduler;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.vgpu.api.PodRef;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeLockCodec;
import io.vgpu.k8s.pod.PodJson;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * HAMi's per-node bind lock: the node annotation {@code hami.io/mutex.lock = <RFC3339>,<ns>,<pod>},
 * taken by the scheduler when it binds a pod and released by the device plugin once the pod's
 * containers are allocated. It serializes binds per node so the device plugin can tell which pod
 * kubelet is starting.
 *
 * <p>Every write is conditional on the node's {@code resourceVersion}, which the API server
 * enforces: two schedulers racing for one node cannot both win. A lock older than the timeout, or held
 * by a pod that no longer holds it — gone, finished ({@code Succeeded} or {@code Failed}) or being
 * deleted — is taken over: such a pod's containers will not be allocated.
 */
public final class NodeLock {
  /** The node annotation holding the lock. */
  public static final String ANNOTATION = HamiAnnotations.NODE_LOCK;

  private static final Logger LOG = LoggerFactory.getLogger(NodeLock.class);

  private final KubernetesClient client;
  private final ApiWrites writes;
  private final Duration timeout;
  private final Clock clock;
  private final Function<PodRef, Optional<Pod>> cachedPod;

  /** A lock manager; HAMi's default timeout is 5 minutes. */
  public NodeLock(KubernetesClient client, Duration timeout, Clock clock) {
    this(client, timeout, clock, pod -> Optional.empty());
  }

  /**
   * A lock manager that asks the API server about a lock holder only when {@code cachedPod} (an
   * informer's cache) does not hold it: a pod missing from the cache may merely be newer than it.
   */
  public NodeLock(KubernetesClient client, Duration timeout, Clock clock, Function<PodRef, Optional<Pod>> cachedPod) {
    this.client = client;
    this.writes = new ApiWrites(client);
    this.timeout = timeout;
    this.clock = clock;
    this.cachedPod = cachedPod;
  }

  /** Thrown when a node's lock is held by another live pod within the timeout. */
  public static final class ContentionException extends Exception {
    private static final long serialVersionUID = 1L;

    ContentionException(String message) {
      // A busy node is the usual case in a burst, not a fault: its message is what a bind reports, and a
      // stack trace (a walk of every frame, per attempt) would say nothing.
      super(message, null, false, false);
    }
  }

  /**
   * Takes the node's lock for {@code pod}. Re-entrant for the same pod.
   *
   * @throws ContentionException when another live pod holds it within the timeout
   * @throws KubernetesClientException when the API server refuses for another reason
   */
  public void acquire(String nodeName, PodRef pod) throws ContentionException {
    acquire(nodeName, pod, null);
  }

  /**
   * Takes the node's lock for {@code pod}, deciding first on {@code cached}, a copy of the node from an
   * informer, when given: the write carries that copy's resourceVersion, so a stale copy costs a
   * conflict and a fresh read, never a wrong decision. Re-entrant for the same pod.
   *
   * @throws ContentionException when another live pod holds it within the timeout
   * @throws KubernetesClientException when the API server refuses for another reason
   */
  public void acquire(String nodeName, PodRef pod, @Nullable Node cached) throws ContentionException {
    long backoffMillis = 100;
    Node node = cached;
    for (int attempt = 0; ; attempt++) {
      if (node == null) {
        node = client.nodes().withName(nodeName).get();
        if (node == null) {
          throw new KubernetesClientException("node " + nodeName + " not found");
        }
      }
      String current = annotations(node).get(ANNOTATION);
      if (current != null) {
        NodeLockCodec.NodeLock holder = parseOrExpired(current);
        if (ownedBy(holder, pod)) {
          return;
        }
        boolean expired = holder.time().plus(timeout).isBefore(clock.instant());
        boolean ownerGone = holder.hasOwner() && !holds(new PodRef(holder.namespace(), holder.pod()));
        if (!expired && !ownerGone) {
          throw contention(nodeName);
        }
        LOG.info("taking over {} lock of node {} ({})", current, nodeName, expired ? "expired" : "its pod is gone, finished or being deleted");
      }
      if (conditionalWrite(node, NodeLockCodec.encode(clock.instant(), pod.namespace(), pod.name()))) {
        return;
      }
      if (attempt == 4) {
        throw new ContentionException("node " + nodeName + " lock: the node kept changing while locking");
      }
      // A cached copy that was stale is read afresh at once; a fresh one that conflicted backs off.
      if (node != cached) {
        sleep(backoffMillis);
        backoffMillis *= 2;
      }
      node = null;
    }
  }

  /** HAMi's refusal of a bind to a node whose lock another pod holds. */
  ContentionException contention(String nodeName) {
    return new ContentionException("node " + nodeName + " has been locked within " + format(timeout) + ": node lock contention");
  }

  /** Whether the pod still holds a lock: it exists, has not finished and is not being deleted. */
  private boolean holds(PodRef ref) {
    Optional<Pod> cached = cachedPod.apply(ref);
    Pod pod = cached.isPresent() ? cached.get() : client.pods().inNamespace(ref.namespace()).withName(ref.name()).get();
    return pod != null && live(pod);
  }

  /** Whether a pod may still be started by kubelet: not finished, and not being deleted. */
  static boolean live(Pod pod) {
    String phase = pod.getStatus() == null ? null : pod.getStatus().getPhase();
    boolean finished = "Succeeded".equals(phase) || "Failed".equals(phase);
    return !finished && pod.getMetadata().getDeletionTimestamp() == null;
  }

  /**
   * Releases the node's lock if {@code pod} holds it (or, with {@code force}, whoever holds it).
   *
   * @return whether a lock was removed
   */
  public boolean release(String nodeName, PodRef pod, boolean force) {
    for (int attempt = 0; attempt < 5; attempt++) {
      Node node = client.nodes().withName(nodeName).get();
      if (node == null) {
        return false;
      }
      String current = annotations(node).get(ANNOTATION);
      if (current == null) {
        return false;
      }
      if (!force && !ownedBy(parseOrExpired(current), pod)) {
        LOG.debug("not releasing {} lock of node {}: held by someone else", current, nodeName);
        return false;
      }
      if (conditionalWrite(node, null)) {
        return true;
      }
    }
    return false;
  }

  /** The node's current lock, if any. */
  public Optional<NodeLockCodec.NodeLock> holder(String nodeName) {
    Node node = client.nodes().withName(nodeName).get();
    String value = node == null ? null : annotations(node).get(ANNOTATION);
    return value == null ? Optional.empty() : Optional.of(parseOrExpired(value));
  }

  /** Whether {@code lock} names {@code pod} as its holder. */
  static boolean ownedBy(NodeLockCodec.NodeLock lock, PodRef pod) {
    return lock.namespace().equals(pod.namespace()) && lock.pod().equals(pod.name());
  }

  /** An unparsable lock is treated as expired, so a corrupt value cannot wedge the node forever. */
  private static NodeLockCodec.NodeLock parseOrExpired(String value) {
    try {
      return NodeLockCodec.decode(value);
    } catch (IllegalArgumentException e) {
      LOG.warn("{}", e.getMessage());
      return new NodeLockCodec.NodeLock(Instant.EPOCH, "", "");
    }
  }

  /**
   * Writes (or, with {@code null}, removes) the lock conditionally on the resourceVersion the node was
   * read at, a precondition the API server enforces: it refuses the write (409) when someone else
   * changed the node first. Returns false in that case. A lock is written with a merge patch that
   * carries only the annotation, so a copy of the node that keeps only some of its fields (an informer's
   * lean copy) is enough to decide; it is removed with an update of the whole node, which {@link
   * #release} has just read (a merge patch's {@code null} removes a key on a real API server, but not on
   * every stand-in of one).
   */
  private boolean conditionalWrite(Node node, @Nullable String value) {
    try {
      if (value == null) {
        Node updated = new NodeBuilder(node).build();
        Map<String, String> annotations = new HashMap<>(annotations(node));
        annotations.remove(ANNOTATION);
        updated.getMetadata().setAnnotations(annotations);
        client.nodes().resource(updated).update();
      } else {
        writes.patchNode(node.getMetadata().getName(), lockPatch(node.getMetadata().getResourceVersion(), value));
      }
      return true;
    } catch (KubernetesClientException e) {
      if (e.getCode() == 409) {
        return false;
      }
      throw e;
    }
  }

  /**
   * The merge patch that writes lock {@code value} on a node read at {@code resourceVersion}: the API
   * server refuses it (409) once the node has changed since.
   */
  static String lockPatch(String resourceVersion, String value) {
    ObjectNode patch = PodJson.mapper().createObjectNode();
    ObjectNode metadata = patch.putObject("metadata");
    metadata.put("resourceVersion", resourceVersion);
    metadata.putObject("annotations").put(ANNOTATION, value);
    return patch.toString();
  }

  private static Map<String, String> annotations(Node node) {
    Map<String, String> a = node.getMetadata().getAnnotations();
    return a == null ? Map.of() : a;
  }

  /** Go's duration format for whole minutes and seconds, as HAMi's message prints it (e.g. 5m0s). */
  static String format(Duration d) {
    long seconds = d.getSeconds();
    return seconds >= 60 ? (seconds / 60) + "m" + (seconds % 60) + "s" : seconds + "s";
  }

  private static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KubernetesClientException("interrupted while locking a node");
    }
  }
}
