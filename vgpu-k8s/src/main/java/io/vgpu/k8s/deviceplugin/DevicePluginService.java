package io.vgpu.k8s.deviceplugin;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginGrpc;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginOptions;
import io.vgpu.k8s.deviceplugin.v1beta1.Empty;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreStartContainerRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.PreStartContainerResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DevicePlugin gRPC service kubelet calls: the replica list (streamed again on every change), the
 * preferred-allocation hint, and Allocate, which hands each container exactly the cards and limits
 * the scheduler wrote into its pod.
 */
public final class DevicePluginService extends DevicePluginGrpc.DevicePluginImplBase {
  private static final Logger LOG = LoggerFactory.getLogger(DevicePluginService.class);

  /** What answers kubelet's Allocate and GetPreferredAllocation. */
  public interface Allocator {
    /**
     * Answers Allocate.
     *
     * @throws PodAllocator.AllocationException when the request must be refused; the message says why
     */
    AllocateResponse allocate(AllocateRequest request) throws PodAllocator.AllocationException;

    /** Answers GetPreferredAllocation; never refuses. */
    PreferredAllocationResponse preferred(PreferredAllocationRequest request);
  }

  private final AdvertisedDevices devices;
  private final Allocator allocator;

  /** A service advertising {@code devices} and allocating with {@code allocator}. */
  public DevicePluginService(AdvertisedDevices devices, Allocator allocator) {
    this.devices = devices;
    this.allocator = allocator;
  }

  @Override
  public void getDevicePluginOptions(Empty request, StreamObserver<DevicePluginOptions> response) {
    response.onNext(DevicePluginOptions.newBuilder().setPreStartRequired(false).setGetPreferredAllocationAvailable(true).build());
    response.onCompleted();
  }

  @Override
  public void listAndWatch(Empty request, StreamObserver<ListAndWatchResponse> response) {
    ServerCallStreamObserver<ListAndWatchResponse> stream = (ServerCallStreamObserver<ListAndWatchResponse>) response;
    Object lock = new Object();
    Runnable[] stop = new Runnable[1];
    stop[0] =
        devices.listen(
            list -> {
              synchronized (lock) {
                if (!stream.isCancelled()) {
                  stream.onNext(list);
                }
              }
            });
    stream.setOnCancelHandler(() -> stop[0].run());
  }

  @Override
  public void getPreferredAllocation(PreferredAllocationRequest request, StreamObserver<PreferredAllocationResponse> response) {
    response.onNext(allocator.preferred(request));
    response.onCompleted();
  }

  @Override
  public void allocate(AllocateRequest request, StreamObserver<AllocateResponse> response) {
    try {
      response.onNext(allocator.allocate(request));
      response.onCompleted();
    } catch (PodAllocator.AllocationException e) {
      LOG.warn("Allocate refused: {}", e.getMessage());
      response.onError(Status.FAILED_PRECONDITION.withDescription(e.getMessage()).asRuntimeException());
    } catch (RuntimeException e) {
      LOG.warn("Allocate failed: {}", e.toString());
      LOG.debug("Allocate failure detail", e);
      response.onError(Status.INTERNAL.withDescription(String.valueOf(e.getMessage())).asRuntimeException());
    }
  }

  @Override
  public void preStartContainer(PreStartContainerRequest request, StreamObserver<PreStartContainerResponse> response) {
    response.onNext(PreStartContainerResponse.getDefaultInstance());
    response.onCompleted();
  }
}
