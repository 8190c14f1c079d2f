package io.vgpu.k8s.watchdog;

import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import io.vgpu.k8s.podresources.v1.ContainerDevices;
import io.vgpu.k8s.podresources.v1.ContainerResources;
import io.vgpu.k8s.podresources.v1.ListPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.PodResources;
import io.vgpu.k8s.podresources.v1.PodResourcesListerGrpc;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * kubelet's PodResources v1 API over its unix socket: which device IDs of one extended resource kubelet's
 * device manager gave each container on this node. kubelet's own books, which no pod can edit. When
 * the socket cannot be reached the answer is empty, with one WARN per outage and one INFO when it is
 * back.
 */
public final class KubeletPodResources implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(KubeletPodResources.class);

  private final Path socket;
  private final String resourceName;
  private final Duration timeout;
  private @Nullable ManagedChannel channel;
  private boolean failing;

  /**
   * A client of {@code socket}.
   *
   * @param resourceName the resource whose devices are read (e.g. {@code nvidia.com/gpu})
   * @param timeout the deadline of one List call
   */
  public KubeletPodResources(Path socket, String resourceName, Duration timeout) {
    this.socket = socket;
    this.resourceName = resourceName;
    this.timeout = timeout;
  }

  /**
   * The device IDs of the resource per container, keyed {@code namespace/pod/container}, containers
   * without any left out; empty when kubelet cannot be asked.
   */
  public synchronized Optional<Map<String, List<String>>> list() {
    try {
      if (!Files.exists(socket)) {
        throw new IllegalStateException("socket " + socket + " does not exist");
      }
      if (channel == null) {
        channel = UnixSockets.connect(socket);
      }
      List<PodResources> pods =
          PodResourcesListerGrpc.newBlockingStub(channel).withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS).list(ListPodResourcesRequest.getDefaultInstance()).getPodResourcesList();
      Map<String, List<String>> out = new LinkedHashMap<>();
      for (PodResources pod : pods) {
        for (ContainerResources container : pod.getContainersList()) {
          List<String> ids = new ArrayList<>();
          for (ContainerDevices devices : container.getDevicesList()) {
            if (resourceName.equals(devices.getResourceName())) {
              ids.addAll(devices.getDeviceIdsList());
            }
          }
          if (!ids.isEmpty()) {
            out.put(pod.getNamespace() + "/" + pod.getName() + "/" + container.getName(), List.copyOf(ids));
          }
        }
      }
      if (failing) {
        LOG.info("kubelet's PodResources API at {} answers again", socket);
        failing = false;
      }
      return Optional.of(out);
    } catch (StatusRuntimeException | IllegalStateException e) {
      if (!failing) {
        LOG.warn("kubelet's PodResources API at {} cannot be asked ({}): until it can, every container asking for {} is granted whole memory on every card of this node",
            socket, e.getMessage(), resourceName);
        failing = true;
      }
      if (channel != null && !(e instanceof StatusRuntimeException s && s.getStatus().getCode() == io.grpc.Status.Code.DEADLINE_EXCEEDED)) {
        channel.shutdownNow();
        channel = null;
      }
      return Optional.empty();
    }
  }

  @Override
  public synchronized void close() {
    if (channel != null) {
      channel.shutdownNow();
      channel = null;
    }
  }
}
