package io.vgpu.examples.lab.kubelet;

import io.grpc.ManagedChannel;
import io.grpc.stub.StreamObserver;
import io.vgpu.k8s.deviceplugin.UnixSockets;
import io.vgpu.k8s.deviceplugin.v1beta1.AllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerAllocateResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.ContainerPreferredAllocationRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.Device;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginGrpc;
import io.vgpu.k8s.deviceplugin.v1beta1.DevicePluginOptions;
import io.vgpu.k8s.deviceplugin.v1beta1.Empty;
import io.vgpu.k8s.deviceplugin.v1beta1.ListAndWatchResponse;
import io.vgpu.k8s.deviceplugin.v1beta1.PreStartContainerRequest;
import io.vgpu.k8s.deviceplugin.v1beta1.PreferredAllocationRequest;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * kubelet's connection to one registered device plugin: its options, the device list it streams
 * (ListAndWatch), and the per-container calls (GetPreferredAllocation, Allocate, PreStartContainer).
 */
final class DevicePluginClient implements AutoCloseable {
  private static final long CALL_SECONDS = 30;

  private final String resourceName;
  private final ManagedChannel channel;
  private final DevicePluginOptions options;
  private final Map<String, Boolean> devices = new LinkedHashMap<>();
  private final Runnable onChange;
  private volatile boolean connected = true;
  private volatile int lists;

  /**
   * Connects to a plugin that just registered and starts following its device list.
   *
   * @param onChange called after every device list update and when the stream ends
   */
  DevicePluginClient(Path socket, String resourceName, DevicePluginOptions registered, Runnable onChange) {
    this.resourceName = resourceName;
    this.channel = UnixSockets.connect(socket);
    this.onChange = onChange;
    DevicePluginOptions asked;
    try {
      asked = DevicePluginGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).getDevicePluginOptions(Empty.getDefaultInstance());
    } catch (RuntimeException e) {
      asked = registered;
    }
    this.options = asked;
    DevicePluginGrpc.newStub(channel).listAndWatch(Empty.getDefaultInstance(), new StreamObserver<>() {
      @Override
      public void onNext(ListAndWatchResponse response) {
        synchronized (devices) {
          devices.clear();
          for (Device d : response.getDevicesList()) {
            devices.put(d.getID(), "Healthy".equals(d.getHealth()));
          }
        }
        lists++;
        onChange.run();
      }

      @Override
      public void onError(Throwable t) {
        ended();
      }

      @Override
      public void onCompleted() {
        ended();
      }
    });
  }

  private void ended() {
    connected = false;
    onChange.run();
  }

  String resourceName() {
    return resourceName;
  }

  /** Whether the plugin is still connected and has sent its device list. */
  boolean serving() {
    return connected && lists > 0;
  }

  /** The devices and whether each is healthy, in the plugin's order. */
  Map<String, Boolean> devices() {
    synchronized (devices) {
      return new LinkedHashMap<>(devices);
    }
  }

  /** The plugin's choice among {@code available}, or the first {@code size} when it gives none. */
  List<String> preferred(List<String> available, int size) {
    if (options.getGetPreferredAllocationAvailable()) {
      var response =
          DevicePluginGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).getPreferredAllocation(
              PreferredAllocationRequest.newBuilder()
                  .addContainerRequests(ContainerPreferredAllocationRequest.newBuilder().addAllAvailableDeviceIDs(available).setAllocationSize(size))
                  .build());
      if (response.getContainerResponsesCount() == 1) {
        List<String> chosen = new ArrayList<>(response.getContainerResponses(0).getDeviceIDsList());
        if (chosen.size() == size && available.containsAll(chosen)) {
          return chosen;
        }
      }
    }
    return new ArrayList<>(available.subList(0, size));
  }

  ContainerAllocateResponse allocate(List<String> ids) {
    var response =
        DevicePluginGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).allocate(
            AllocateRequest.newBuilder().addContainerRequests(ContainerAllocateRequest.newBuilder().addAllDevicesIds(ids)).build());
    if (response.getContainerResponsesCount() != 1) {
      throw new IllegalStateException("the device plugin answered " + response.getContainerResponsesCount() + " container responses for one request");
    }
    return response.getContainerResponses(0);
  }

  void preStart(List<String> ids) {
    if (options.getPreStartRequired()) {
      DevicePluginGrpc.newBlockingStub(channel).withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).preStartContainer(
          PreStartContainerRequest.newBuilder().addAllDevicesIds(ids).build());
    }
  }

  @Override
  public void close() {
    connected = false;
    channel.shutdownNow();
  }
}
