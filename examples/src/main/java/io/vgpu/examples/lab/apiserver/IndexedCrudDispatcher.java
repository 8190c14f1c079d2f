package io.vgpu.examples.lab.apiserver;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.server.mock.KubernetesAttributesExtractor;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.mockwebserver.crud.Attribute;
import io.fabric8.mockwebserver.crud.AttributeSet;
import io.fabric8.mockwebserver.crud.Value;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.net.HttpURLConnection;
import java.util.AbstractMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.jspecify.annotations.Nullable;

/**
 * fabric8's CRUD store with its objects indexed by name. fabric8 finds an object by matching the
 * request's attributes against every object it holds, so each read or write of one object costs a scan
 * of the whole store: at thousands of nodes and pods the API server, not what it serves, would set the
 * pace. Here a request that names its object (a get, and the lookup behind every create, update and
 * patch) looks only at the objects of that name, with fabric8's own matching among them; lists,
 * watches and deletes are fabric8's, unchanged.
 */
final class IndexedCrudDispatcher extends KubernetesCrudDispatcher {
  private final ReadWriteLock lock = new ReentrantReadWriteLock();
  /** The stored objects' keys by their name. */
  private final Map<String, Set<AttributeSet>> byName = new HashMap<>();

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

  private MockResponse write(java.util.function.Supplier<MockResponse> change) {
    lock.writeLock().lock();
    try {
      return change.get();
    } finally {
      lock.writeLock().unlock();
    }
  }

  @Override
  public MockResponse handleGet(String path) {
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
    if (oldAttributes != null && !map.containsKey(oldAttributes)) {
      forget(oldAttributes);
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
      } else {
        rebuild();
      }
    }
  }

  @Override
  public void reset() {
    write(() -> {
      super.reset();
      byName.clear();
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

  /** The whole index from the store, should a key ever be computed otherwise than fabric8 did. */
  private void rebuild() {
    byName.clear();
    map.keySet().forEach(this::remember);
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
