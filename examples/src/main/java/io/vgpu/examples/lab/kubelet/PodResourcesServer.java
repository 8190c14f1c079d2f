package io.vgpu.examples.lab.kubelet;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.vgpu.k8s.podresources.v1.AllocatableResourcesRequest;
import io.vgpu.k8s.podresources.v1.AllocatableResourcesResponse;
import io.vgpu.k8s.podresources.v1.ContainerDevices;
import io.vgpu.k8s.podresources.v1.ContainerResources;
import io.vgpu.k8s.podresources.v1.GetPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.GetPodResourcesResponse;
import io.vgpu.k8s.podresources.v1.ListPodResourcesRequest;
import io.vgpu.k8s.podresources.v1.ListPodResourcesResponse;
import io.vgpu.k8s.podresources.v1.PodResources;
import io.vgpu.k8s.podresources.v1.PodResourcesListerGrpc;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * kubelet's PodResources v1 service ({@code v1.PodResourcesLister}) on a node's unix socket: for every
 * pod kubelet runs and each of its containers, the device IDs of each resource that Allocate gave it,
 * and the devices the node can give out. A node agent learns here which whole cards a container holds.
 */
public final class PodResourcesServer implements AutoCloseable {
  /** The socket's file name, as kubelet names it in {@code /var/lib/kubelet/pod-resources}. */
  public static final String SOCKET = "kubelet.sock";

  private final Server server;

  /**
   * Serves on {@code socket}.
   *
   * @param pods the entries of the pods kubelet runs now ({@link #of})
   * @param allocatable the healthy devices by resource
   */
  public PodResourcesServer(Path socket, Supplier<List<PodResources>> pods, Supplier<Map<String, List<String>>> allocatable) throws IOException {
    this.server = UnixSockets.serve(socket, new PodResourcesListerGrpc.PodResourcesListerImplBase() {
      @Override
      public void list(ListPodResourcesRequest request, StreamObserver<ListPodResourcesResponse> response) {
        ListPodResourcesResponse.Builder out = ListPodResourcesResponse.newBuilder();
        out.addAllPodResources(pods.get());
        response.onNext(out.build());
        response.onCompleted();
      }

      @Override
      public void getAllocatableResources(AllocatableResourcesRequest request, StreamObserver<AllocatableResourcesResponse> response) {
        AllocatableResourcesResponse.Builder out = AllocatableResourcesResponse.newBuilder();
        allocatable.get().forEach((resource, ids) -> out.addDevices(ContainerDevices.newBuilder().setResourceName(resource).addAllDeviceIds(ids)));
        response.onNext(out.build());
        response.onCompleted();
      }

      @Override
      public void get(GetPodResourcesRequest request, StreamObserver<GetPodResourcesResponse> response) {
        Optional<PodResources> pod = pods.get().stream()
            .filter(p -> p.getName().equals(request.getPodName()) && p.getNamespace().equals(request.getPodNamespace()))
            .findFirst();
        if (pod.isEmpty()) {
          response.onError(Status.NOT_FOUND.withDescription("pod " + request.getPodName() + " not found in namespace " + request.getPodNamespace()).asRuntimeException());
          return;
        }
        response.onNext(GetPodResourcesResponse.newBuilder().setPodResources(pod.get()).build());
        response.onCompleted();
      }
    });
  }

  /** The entries of the pods that still hold what they were given: those not ended. */
  static List<PodResources> of(Collection<PodWorker> workers) {
    return workers.stream().filter(w -> !w.phase().equals("Succeeded") && !w.phase().equals("Failed")).map(PodResourcesServer::resources).toList();
  }

  /**
   * One pod's entry: its app containers and its sidecars (init containers that keep running), as
   * kubelet lists them, each with its devices by resource.
   */
  static PodResources resources(PodWorker worker) {
    Pod pod = worker.pod();
    PodResources.Builder out = PodResources.newBuilder().setName(pod.getMetadata().getName()).setNamespace(pod.getMetadata().getNamespace());
    List<String> listed = new java.util.ArrayList<>();
    Optional.ofNullable(pod.getSpec().getInitContainers()).orElse(List.of()).stream()
        .filter(c -> "Always".equals(c.getRestartPolicy())).map(Container::getName).forEach(listed::add);
    pod.getSpec().getContainers().stream().map(Container::getName).forEach(listed::add);
    Map<String, ContainerRecord> records = new java.util.HashMap<>();
    worker.containers().forEach(c -> records.put(c.name(), c));
    for (String name : listed) {
      ContainerResources.Builder container = ContainerResources.newBuilder().setName(name);
      Optional.ofNullable(records.get(name)).ifPresent(r -> r.devicesByResource().forEach((resource, ids) ->
          container.addDevices(ContainerDevices.newBuilder().setResourceName(resource).addAllDeviceIds(ids))));
      out.addContainers(container);
    }
    return out.build();
  }

  @Override
  public void close() {
    server.shutdownNow();
  }
}
