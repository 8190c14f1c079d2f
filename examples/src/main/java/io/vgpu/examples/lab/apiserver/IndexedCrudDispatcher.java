package io.vgpu.examples.lab.apiserver;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesAttributesExtractor;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.mockwebserver.crud.Attribute;
import io.fabric8.mockwebserver.crud.AttributeSet;
import io.fabric8.mockwebserver.crud.Value;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import io.vgpu.k8s.pod.PodJson;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.jspecify.annotations.Nullable;

/**
 * fabric8's CRUD store with its objects indexed by name. fabric8 finds an object by matching the
 * request's attributes against every object it holds, so each read or write of one object costs a scan
 * of the whole store: at thousands of nodes and pods the API server, not what it serves, would set the
 * pace. Here a request that names its object (a get, and the lookup behind every create, update and
 * patch) looks only at the objects of that name, with fabric8's own matching among them; a list of
 * the pods on one node (kubelet's and a device plugin's {@code spec.nodeName} selector) looks only at
 * the pods bound there; other lists, watches and deletes are fabric8's, unchanged.
 */
final class IndexedCrudDispatcher extends KubernetesCrudDispatcher {
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  /** The stored objects' keys by their name. */
  private final Map<String, Set<AttributeSet>> byName = new HashMap<>();
  /** The stored pods' keys by the node they are bound to (unbound pods are not here). */
  private final Map<String, Set<AttributeSet>> podsByNode = new HashMap<>();
  /** The node each stored pod's key is indexed under in {@link #podsByNode}. */
  private final Map<AttributeSet, String> nodeOfPod = new HashMap<>();
  /** Changes of stored ValidatingAdmissionPolicies and their bindings, so their compiled form knows when it is stale. */
  private final AtomicLong admissionPolicyChanges = new AtomicLong();

  @Override
  public MockResponse handleCreate(RecordedRequest request) {
    return write(() -> super.handleCreate(request));
  }

  @Override
  public MockResponse handleUpdate(RecordedRequest request) {
    return write(() -> super.handleUpdate(request));
  }

  @Override
  public MockResponse handlePatch(RecordedRequest request) {
    return write(() -> super.handlePatch(request));
  }

  @Override
  public MockResponse handleDelete(String path) {
    return write(() -> super.handleDelete(path));
  }

  /**
   * Runs {@code change} under the store's write lock: reads it makes see no other write until it
   * returns (a read-admit-write of one object). The store's own handlers may be called from it.
   */
  MockResponse atomically(Supplier<MockResponse> change) {
    return write(change);
  }

  /** How many times the stored ValidatingAdmissionPolicies and bindings changed. */
  long admissionPolicyChanges() {
    return admissionPolicyChanges.get();
  }

  private MockResponse write(Supplier<MockResponse> change) {
    lock.writeLock().lock();
    try {
      return change.get();
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public MockResponse handleGet(String path) {
    if (path.contains("limit=")) {
      MockResponse page = handlePagedList(path);
      if (page != null) {
        return page;
      }
    }
    AttributeSet query = getKey(path);
    String name = name(query);
    if (name == null || path.contains("watch=true")) {
      return super.handleGet(path);
    }
    lock.readLock().lock();
    try {
      Map.Entry<AttributeSet, String> found = find(name, query);
      MockResponse response = new MockResponse();
      if (found == null) {
        return response.setResponseCode(HttpURLConnection.HTTP_NOT_FOUND);
      }
      return response.setBody(found.getValue()).setResponseCode(HttpURLConnection.HTTP_OK);
    } finally {
      lock.readLock().unlock();
    }
  }

  /**
   * A list request with {@code limit} (and {@code continue}), served as the API server pages it: the
   * first page takes a snapshot of every matching object, later pages are cut from that snapshot, so
   * a client paging through sees one consistent list at one resource version. fabric8's own handler
   * answers a list with every object in one body, which at 50,000 pods is hundreds of MB a client must
   * hold at once.
   *
   * @return the page, or {@code null} when the request is not a paged list
   */
  @Nullable MockResponse handlePagedList(String path) {
    URI uri = URI.create(path);
    String query = uri.getRawQuery();
    long limit = longParam(query, "limit");
    if (limit <= 0 || query.contains("watch=true")) {
      return null;
    }
    String token = param(query, "continue");
    Snapshot snapshot;
    if (token == null || token.isEmpty()) {
      AttributeSet key = getKey(uri.getRawPath() + "?" + without(query, "limit", "continue"));
      if (name(key) != null) {
        return null;
      }
      List<String> items = new ArrayList<>();
      String version;
      lock.readLock().lock();
      try {
        synchronized (map) {
          map.forEach((k, v) -> {
            if (k.matches(key)) {
              items.add(v);
            }
          });
        }
        version = Long.toString(currentResourceVersion());
      } finally {
        lock.readLock().unlock();
      }
      snapshot = new Snapshot(items, version);
    } else {
      synchronized (snapshots) {
        snapshot = snapshots.get(token);
      }
      if (snapshot == null) {
        return new MockResponse().setResponseCode(410).setBody("{\"apiVersion\":\"v1\",\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,"
            + "\"message\":\"the continue token of this list is unknown or expired\"}");
      }
    }
    int end = (int) Math.min(snapshot.items.size(), snapshot.from + limit);
    String next = "";
    if (end < snapshot.items.size()) {
      next = UUID.randomUUID().toString();
      synchronized (snapshots) {
        snapshots.put(next, new Snapshot(snapshot.items, snapshot.version, end));
      }
    }
    String body = listBody(snapshot.items.subList(snapshot.from, end), snapshot.version, ",\"continue\":\"" + next + "\"");
    return new MockResponse().setResponseCode(200).setHeader("Content-Type", "application/json").setBody(body);
  }

  /**
   * The pods bound to {@code nodeName} that also match the rest of the list request {@code path} (its
   * namespace, label and other field selectors), as one list body: the answer to a list with a {@code
   * spec.nodeName} field selector, found through the node index rather than by reading every pod the
   * store holds (at 50,000 running pods that read was a list of hundreds of MB per kubelet call).
   */
  String podsOnNode(String path, String nodeName) {
    AttributeSet query = getKey(path);
    List<String> items = new ArrayList<>();
    String version;
    lock.readLock().lock();
    try {
      synchronized (map) {
        for (AttributeSet key : podsByNode.getOrDefault(nodeName, Set.of())) {
          String value = map.get(key);
          if (value != null && key.matches(query)) {
            items.add(value);
          }
        }
      }
      version = Long.toString(currentResourceVersion());
    } finally {
      lock.readLock().unlock();
    }
    return listBody(items, version, "");
  }

  /** A List of stored objects' JSON at {@code version}; {@code moreMetadata} is added to its metadata as written. */
  private static String listBody(List<String> items, String version, String moreMetadata) {
    return "{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[" + String.join(",", items) + "],\"metadata\":{\"resourceVersion\":\"" + version + "\"" + moreMetadata + "}}";
  }

  /**
   * Continue tokens kept, at most: a token stays valid after use (a client may retry a page), and the
   * least recently used one is forgotten first (its page then answers 410 Expired, as an API server
   * answers a token older than its compaction). They share their list's snapshot, so each costs little.
   */
  private static final int MAX_TOKENS = 4096;

  private final Map<String, Snapshot> snapshots =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Snapshot> eldest) {
          return size() > MAX_TOKENS;
        }
      };

  /** A list's objects as they were at its first page, and where the next page starts. */
  private record Snapshot(List<String> items, String version, int from) {
    Snapshot(List<String> items, String version) {
      this(items, version, 0);
    }
  }

  /** A resource version newer than every object's (fabric8 hands them out counting up; a gap is harmless). */
  private long currentResourceVersion() {
    return requestResourceVersion();
  }

  private static long longParam(@Nullable String query, String name) {
    String value = param(query, name);
    try {
      return value == null ? 0 : Long.parseLong(value);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  private static @Nullable String param(@Nullable String query, String name) {
    if (query == null) {
      return null;
    }
    for (String p : query.split("&")) {
      if (p.startsWith(name + "=")) {
        return URLDecoder.decode(p.substring(name.length() + 1), StandardCharsets.UTF_8);
      }
    }
    return null;
  }

  private static String without(String query, String... names) {
    List<String> kept = new ArrayList<>();
    outer:
    for (String p : query.split("&")) {
      for (String n : names) {
        if (p.startsWith(n + "=")) {
          continue outer;
        }
      }
      kept.add(p);
    }
    return String.join("&", kept);
  }

  /** Called by the create, update and patch handlers (under the write lock): only the named objects. */
  @Override
  public Map.@Nullable Entry<AttributeSet, String> findResource(AttributeSet attributes) {
    String name = name(attributes);
    return name == null ? super.findResource(attributes) : find(name, attributes);
  }

  private Map.@Nullable Entry<AttributeSet, String> find(String name, AttributeSet query) {
    for (AttributeSet key : byName.getOrDefault(name, Set.of())) {
      if (key.matches(query)) {
        String value = map.get(key);
        if (value != null) {
          return new AbstractMap.SimpleImmutableEntry<>(key, value);
        }
      }
    }
    return null;
  }

  /** Every change of the store comes through here (under the write lock); the index follows it. */
  @Override
  public void processEvent(String path, AttributeSet pathAttributes, @Nullable AttributeSet oldAttributes, @Nullable GenericKubernetesResource resource, @Nullable String newState) {
    super.processEvent(path, pathAttributes, oldAttributes, resource, newState);
    if (path.contains("/validatingadmissionpolic")) {
      admissionPolicyChanges.incrementAndGet();
    }
    if (oldAttributes != null && !map.containsKey(oldAttributes)) {
      forget(oldAttributes);
      unindexPod(oldAttributes);
    }
    if (newState != null) {
      // The key fabric8 stored the new state under, computed as fabric8 computes it.
      KubernetesAttributesExtractor extractor = (KubernetesAttributesExtractor) attributeExtractor;
      AttributeSet key = resource != null ? extractor.extract(resource) : extractor.fromResource(newState);
      if (!key.containsKey(KubernetesAttributesExtractor.PLURAL)) {
        key = AttributeSet.merge(pathAttributes, key);
      }
      if (map.containsKey(key)) {
        remember(key);
        indexPod(key, resource, newState);
      } else {
        rebuild();
      }
    }
  }

  /** Files a stored pod under the node its new state is bound to (or under none, unbound). */
  private void indexPod(AttributeSet key, @Nullable GenericKubernetesResource resource, String newState) {
    if (!isPod(key)) {
      return;
    }
    String node = nodeNameOf(resource, newState);
    String previous = node.isEmpty() ? nodeOfPod.remove(key) : nodeOfPod.put(key, node);
    if (previous != null && !previous.equals(node)) {
      removeFromNode(previous, key);
    }
    if (!node.isEmpty()) {
      podsByNode.computeIfAbsent(node, n -> new LinkedHashSet<>()).add(key);
    }
  }

  private void unindexPod(AttributeSet key) {
    String node = nodeOfPod.remove(key);
    if (node != null) {
      removeFromNode(node, key);
    }
  }

  private void removeFromNode(String node, AttributeSet key) {
    Set<AttributeSet> keys = podsByNode.get(node);
    if (keys != null) {
      keys.remove(key);
      if (keys.isEmpty()) {
        podsByNode.remove(node);
      }
    }
  }

  private static boolean isPod(AttributeSet key) {
    Attribute plural = key.getAttribute(KubernetesAttributesExtractor.PLURAL);
    return plural != null && plural.getValues().size() == 1 && "pods".equals(plural.getValues().get(0).toString());
  }

  /** A pod's {@code spec.nodeName}, empty when unbound: from the parsed resource fabric8 hands over, else from its JSON. */
  private static String nodeNameOf(@Nullable GenericKubernetesResource resource, String json) {
    Object node = resource != null ? resource.get("spec", "nodeName") : PodJson.mapper().readTree(json).path("spec").path("nodeName").asString("");
    return node instanceof String s ? s : node == null ? "" : node.toString();
  }

  @Override
  public void reset() {
    write(() -> {
      super.reset();
      byName.clear();
      podsByNode.clear();
      nodeOfPod.clear();
      return new MockResponse();
    });
  }

  private void remember(AttributeSet key) {
    String name = name(key);
    if (name != null) {
      byName.computeIfAbsent(name, n -> new LinkedHashSet<>()).add(key);
    }
  }

  private void forget(AttributeSet key) {
    String name = name(key);
    Set<AttributeSet> keys = name == null ? null : byName.get(name);
    if (keys != null) {
      keys.remove(key);
      if (keys.isEmpty()) {
        byName.remove(name);
      }
    }
  }

  /** The whole indexes from the store, should a key ever be computed otherwise than fabric8 did. */
  private void rebuild() {
    byName.clear();
    map.keySet().forEach(this::remember);
    podsByNode.clear();
    nodeOfPod.clear();
    map.forEach((key, json) -> indexPod(key, null, json));
  }

  private static @Nullable String name(AttributeSet attributes) {
    Attribute name = attributes.getAttribute(KubernetesAttributesExtractor.NAME);
    if (name == null || name.getValues().size() != 1) {
      return null;
    }
    Value value = name.getValues().get(0);
    return value.toString();
  }
}
