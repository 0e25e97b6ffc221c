#map_in = affine_map<(d0, d1) -> (d0, d1 floordiv 2)>
#map_out = affine_map<(d0, d1) -> (d0, d1)>
module @up {
  flow.executable private @up_dispatch_0 {
    flow.executable.export public @up_dispatch_0_elementwise_8x16_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice()
      flow.return %x, %y, %z : index, index, index
    }
    builtin.module {
      func.func @up_dispatch_0_elementwise_8x16_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x8xf32>>, %arg1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x16xf32>>) {
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [8, 8], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x8xf32>> -> tensor<8x8xf32>
        %1 = tensor.empty() : tensor<8x16xf32>
        %2 = linalg.generic {indexing_maps = [#map_in, #map_out], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<8x8xf32>) outs(%1 : tensor<8x16xf32>) {
        ^bb0(%in: f32, %out: f32):
          %3 = arith.addf %in, %in : f32
          linalg.yield %3 : f32
        } -> tensor<8x16xf32>
        iree_tensor_ext.dispatch.tensor.store %2, %arg1, offsets = [0, 0], sizes = [8, 16], strides = [1, 1] : tensor<8x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x16xf32>>
        return
      }
    }
  }
  util.func public @up(%arg0: tensor<8x8xf32>) -> tensor<8x16xf32> {
    %0 = flow.dispatch @up_dispatch_0::@up_dispatch_0_elementwise_8x16_f32(%arg0) : (tensor<8x8xf32>) -> tensor<8x16xf32>
    util.return %0 : tensor<8x16xf32>
  }
}
