package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.ConfigMapEnvSource;
import io.fabric8.kubernetes.api.model.ConfigMapKeySelector;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A container's environment from its pod spec, as kubelet makes it (makeEnvironmentVariables): first
 * every {@code envFrom} ConfigMap in order, each key under its prefix, a later source winning over an
 * earlier one; then every {@code env} entry in order over them, a literal {@code value} with {@code
 * $(VAR)} expanded from what is defined so far (and the service variables), a {@code
 * configMapKeyRef} or {@code fieldRef} as it resolves; finally the service variables ({@code
 * KUBERNETES_SERVICE_HOST} and {@code _PORT}) where the container does not set them itself.
 *
 * <p>A ConfigMap or key that is missing is skipped when its reference is optional and makes the
 * container's configuration fail otherwise, with kubelet's message.
 */
public final class ContainerEnvironment {
  /** The names kubelet passes on from {@code envFrom}; other keys are dropped (and reported). */
  private static final Pattern ENV_NAME = Pattern.compile("[-._a-zA-Z][-._a-zA-Z0-9]*");
  private static final Pattern SUBSCRIPT = Pattern.compile("metadata\\.(labels|annotations)\\['(.*)'\\]");

  /** Where kubelet reads ConfigMaps of the pod's namespace. */
  public interface ConfigMaps {
    /** The data of a ConfigMap, empty when it does not exist. */
    Optional<Map<String, String>> data(String namespace, String name);
  }

  /**
   * What the downward API reads of the pod besides its object: the node it runs on and the addresses
   * kubelet gives it.
   *
   * @param nodeName the node's name
   * @param hostIp the node's address
   * @param podIp the pod's address
   */
  public record PodPlace(String nodeName, String hostIp, String podIp) {}

  /**
   * The result: the environment in kubelet's order, and the {@code envFrom} keys left out because they
   * are not valid variable names.
   *
   * @param env the variables by name, in the order they were defined
   * @param invalidNames the keys left out, {@code namespace/configmap: key}
   */
  public record Resolved(Map<String, String> env, List<String> invalidNames) {}

  private ContainerEnvironment() {}

  /**
   * Resolves the environment of a container.
   *
   * @param serviceEnv the service variables kubelet adds, by name
   * @throws ContainerConfigException when a required ConfigMap or key is missing, or a field cannot be read
   */
  public static Resolved resolve(Pod pod, Container container, PodPlace place, ConfigMaps configMaps, Map<String, String> serviceEnv)
      throws ContainerConfigException {
    String namespace = pod.getMetadata().getNamespace();
    Map<String, String> env = new LinkedHashMap<>();
    List<String> invalid = new java.util.ArrayList<>();
    for (EnvFromSource from : Optional.ofNullable(container.getEnvFrom()).orElse(List.of())) {
      ConfigMapEnvSource ref = from.getConfigMapRef();
      if (ref == null) {
        continue; // Secrets: the lab stores none
      }
      Optional<Map<String, String>> data = configMaps.data(namespace, ref.getName());
      if (data.isEmpty()) {
        if (Boolean.TRUE.equals(ref.getOptional())) {
          continue;
        }
        throw new ContainerConfigException("configmap \"" + ref.getName() + "\" not found");
      }
      String prefix = Optional.ofNullable(from.getPrefix()).orElse("");
      for (Map.Entry<String, String> e : data.get().entrySet()) {
        String name = prefix + e.getKey();
        if (!ENV_NAME.matcher(name).matches()) {
          invalid.add(namespace + "/" + ref.getName() + ": " + name);
          continue;
        }
        env.remove(name); // a later definition moves to the end, as a map rebuilt in order would keep it
        env.put(name, e.getValue());
      }
    }
    for (EnvVar e : Optional.ofNullable(container.getEnv()).orElse(List.of())) {
      Optional<String> value = value(pod, namespace, e, place, configMaps, expansionView(env, serviceEnv));
      if (value.isPresent()) {
        env.remove(e.getName());
        env.put(e.getName(), value.get());
      }
    }
    serviceEnv.forEach(env::putIfAbsent);
    return new Resolved(env, invalid);
  }

  /** What {@code $(VAR)} sees: the container's variables so far, then the service variables under them. */
  private static Map<String, String> expansionView(Map<String, String> env, Map<String, String> serviceEnv) {
    Map<String, String> view = new LinkedHashMap<>(serviceEnv);
    view.putAll(env);
    return view;
  }

  private static Optional<String> value(Pod pod, String namespace, EnvVar e, PodPlace place, ConfigMaps configMaps, Map<String, String> defined)
      throws ContainerConfigException {
    if (e.getValueFrom() == null) {
      return Optional.of(EnvExpansion.expand(Optional.ofNullable(e.getValue()).orElse(""), defined));
    }
    ConfigMapKeySelector key = e.getValueFrom().getConfigMapKeyRef();
    if (key != null) {
      boolean optional = Boolean.TRUE.equals(key.getOptional());
      Optional<Map<String, String>> data = configMaps.data(namespace, key.getName());
      if (data.isEmpty()) {
        if (optional) {
          return Optional.empty();
        }
        throw new ContainerConfigException("configmap \"" + key.getName() + "\" not found");
      }
      String v = data.get().get(key.getKey());
      if (v == null) {
        if (optional) {
          return Optional.empty();
        }
        throw new ContainerConfigException("couldn't find key " + key.getKey() + " in ConfigMap " + namespace + "/" + key.getName());
      }
      return Optional.of(v);
    }
    if (e.getValueFrom().getFieldRef() != null) {
      return Optional.of(field(pod, e.getValueFrom().getFieldRef().getFieldPath(), place));
    }
    if (e.getValueFrom().getSecretKeyRef() != null) {
      if (Boolean.TRUE.equals(e.getValueFrom().getSecretKeyRef().getOptional())) {
        return Optional.empty();
      }
      throw new ContainerConfigException("secret \"" + e.getValueFrom().getSecretKeyRef().getName() + "\" not found");
    }
    // resourceFieldRef: the lab sets no container resources in the environment
    return Optional.empty();
  }

  /**
   * A downward API field of the pod, as kubelet reads it ({@code metadata.labels['k']} is empty for a
   * missing label).
   *
   * @throws ContainerConfigException for a field the downward API does not offer
   */
  public static String field(Pod pod, String path, PodPlace place) throws ContainerConfigException {
    Matcher subscript = SUBSCRIPT.matcher(path == null ? "" : path);
    if (subscript.matches()) {
      Map<String, String> map = subscript.group(1).equals("labels") ? pod.getMetadata().getLabels() : pod.getMetadata().getAnnotations();
      return Optional.ofNullable(map).map(m -> m.get(subscript.group(2))).orElse("");
    }
    String value = switch (String.valueOf(path)) {
      case "metadata.name" -> pod.getMetadata().getName();
      case "metadata.namespace" -> pod.getMetadata().getNamespace();
      case "metadata.uid" -> pod.getMetadata().getUid();
      case "spec.nodeName" -> place.nodeName();
      case "spec.serviceAccountName" -> serviceAccountName(pod);
      case "status.hostIP", "status.hostIPs" -> place.hostIp();
      case "status.podIP", "status.podIPs" -> place.podIp();
      default -> throw new ContainerConfigException("unsupported fieldPath: " + path);
    };
    return value == null ? "" : value;
  }

  /** The pod's ServiceAccount, {@code default} when it names none (the API server's admission fills it in). */
  public static String serviceAccountName(Pod pod) {
    String name = pod.getSpec().getServiceAccountName();
    return name == null || name.isEmpty() ? "default" : name;
  }
}
