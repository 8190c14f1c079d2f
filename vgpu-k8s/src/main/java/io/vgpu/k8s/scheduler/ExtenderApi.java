package io.vgpu.k8s.scheduler;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.fabric8.kubernetes.api.model.NodeList;
import io.fabric8.kubernetes.api.model.Pod;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * kube-scheduler's extender wire types ({@code k8s.io/kube-scheduler/extender/v1}). The Go structs
 * carry no JSON tags, so the keys are the Go field names in PascalCase, and absent values are
 * {@code null}.
 */
public final class ExtenderApi {
  private ExtenderApi() {}

  /**
   * The arguments of a filter call.
   *
   * @param pod the pod being scheduled
   * @param nodes candidate nodes as objects (when the extender is not node-cache capable, or for a
   *     cluster-autoscaler dry run)
   * @param nodeNames candidate node names (node-cache mode)
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  public record ExtenderArgs(
      @JsonProperty("Pod") @Nullable Pod pod,
      @JsonProperty("Nodes") @Nullable NodeList nodes,
      @JsonProperty("NodeNames") @Nullable List<String> nodeNames) {}

  /**
   * The result of a filter call; logical errors go in {@code Error} with HTTP 200.
   *
   * @param nodes the nodes that pass, when called with node objects
   * @param nodeNames the nodes that pass, when called with names
   * @param failedNodes why each other node fails
   * @param failedAndUnresolvableNodes nodes preemption cannot help (unused: every reason is resolvable)
   * @param error a logical error, or empty
   */
  @JsonInclude(JsonInclude.Include.ALWAYS)
  public record ExtenderFilterResult(
      @JsonProperty("Nodes") @Nullable NodeList nodes,
      @JsonProperty("NodeNames") @Nullable List<String> nodeNames,
      @JsonProperty("FailedNodes") @Nullable Map<String, String> failedNodes,
      @JsonProperty("FailedAndUnresolvableNodes") @Nullable Map<String, String> failedAndUnresolvableNodes,
      @JsonProperty("Error") String error) {

    /** A result that carries only an error. */
    public static ExtenderFilterResult error(String message) {
      return new ExtenderFilterResult(null, null, null, null, message);
    }
  }

  /**
   * The arguments of a bind call.
   *
   * @param podName the pod's name
   * @param podNamespace the pod's namespace
   * @param podUid the pod's UID
   * @param node the node to bind to
   */
  @JsonIgnoreProperties(ignoreUnknown = true)
  public record ExtenderBindingArgs(
      @JsonProperty("PodName") @Nullable String podName,
      @JsonProperty("PodNamespace") @Nullable String podNamespace,
      @JsonProperty("PodUID") @Nullable String podUid,
      @JsonProperty("Node") @Nullable String node) {}

  /**
   * The result of a bind call.
   *
   * @param error a logical error, or empty
   */
  public record ExtenderBindingResult(@JsonProperty("Error") String error) {
    /** Success. */
    public static final ExtenderBindingResult OK = new ExtenderBindingResult("");
  }
}
