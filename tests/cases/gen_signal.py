# DFT, STFT, window-function and MelWeightMatrix cases beyond the ONNX 1.12
# data (onesided, padding and truncation, negative axis, inverse complex input,
# lengths 7, 12, 256, 2048; windowed and complex STFT; windows in float64,
# float16, int32), with numpy references.
#   usage: gen_signal.py OUTDIR
import numpy as np, onnx, os
from onnx import helper as h, TensorProto as TP, numpy_helper as nh
import sys
root=sys.argv[1]
rng=np.random.default_rng(0)
def case(name, nodes, inputs, outputs, feeds, wants, inits=[]):
    d=os.path.join(root,name); os.makedirs(d+'/test_data_set_0',exist_ok=True)
    g=h.make_graph(nodes,name,inputs,outputs,initializer=inits)
    m=h.make_model(g,opset_imports=[h.make_opsetid('',17)]); m.ir_version=8
    onnx.save(m,d+'/model.onnx')
    for i,a in enumerate(feeds): open(f'{d}/test_data_set_0/input_{i}.pb','wb').write(nh.from_array(a).SerializeToString())
    for i,a in enumerate(wants): open(f'{d}/test_data_set_0/output_{i}.pb','wb').write(nh.from_array(a).SerializeToString())
def vi(n,dt,shape): return h.make_tensor_value_info(n,dt,shape)
def c2(y): return np.stack((y.real,y.imag),axis=-1).astype(np.float32)
# DFT onesided, dft_length padding, axis 2, n power of two and not
for n,L,ax,ones,inv,comp in [(64,50,1,1,0,1),(12,16,2,0,0,2),(256,256,1,0,1,2),(7,5,-2,1,0,1),(2048,2048,1,0,0,1)]:
    shape=[2,L,3,comp] if ax==1 else [2,3,L,comp]
    if ax==-2: shape=[2,3,L,comp]
    x=rng.uniform(-1,1,shape).astype(np.float32)
    xc=x[...,0]+(1j*x[...,1] if comp==2 else 0)
    a=1 if ax==1 else 2
    y=(np.fft.ifft if inv else np.fft.fft)(xc.astype(np.complex128),n=n,axis=a)
    if ones: y=np.take(y,range(n//2+1),axis=a)
    dl=nh.from_array(np.array(n,dtype=np.int64),'dl')
    oshape=list(shape); oshape[a]=y.shape[a]; oshape[-1]=2
    case(f'dft_{n}_{L}_{ax}_{ones}_{inv}_{comp}',[h.make_node('DFT',['x','dl'],['y'],axis=ax,onesided=ones,inverse=inv)],
         [vi('x',TP.FLOAT,shape)],[vi('y',TP.FLOAT,oshape)],[x],[c2(y)],[dl])
# STFT complex, not onesided, frame_length input and window
for B,L,comp,step,fl,win,ones in [(2,100,2,7,12,1,0),(1,300,1,64,256,1,1),(3,50,1,3,10,0,1)]:
    x=rng.uniform(-1,1,[B,L,comp]).astype(np.float32)
    w=rng.uniform(0,1,[fl]).astype(np.float32)
    xc=(x[...,0]+(1j*x[...,1] if comp==2 else 0)).astype(np.complex128)
    nf=(L-fl)//step+1; nb=fl//2+1 if ones else fl
    y=np.zeros([B,nf,nb],np.complex128)
    for b in range(B):
        for f in range(nf):
            y[b,f]=np.fft.fft(xc[b,f*step:f*step+fl]*(w if win else 1))[:nb]
    ins=['x','step','w' if win else '','fl']
    inits=[nh.from_array(np.array(step,np.int64),'step'),nh.from_array(np.array(fl,np.int64),'fl')]
    feeds=[x]+([w] if win else []); vis=[vi('x',TP.FLOAT,[B,L,comp])]+([vi('w',TP.FLOAT,[fl])] if win else [])
    case(f'stft_{B}_{L}_{comp}_{step}_{fl}_{win}_{ones}',[h.make_node('STFT',ins,['y'],onesided=ones)],vis,[vi('y',TP.FLOAT,[B,nf,nb,2])],feeds,[c2(y)],inits)
# windows: double and int output, size known constant
for op,a0,a1,a2 in [('HannWindow',.5,.5,0),('HammingWindow',25/46,21/46,0),('BlackmanWindow',.42,.5,.08)]:
    for per in [0,1]:
        for dt,npdt in [(TP.DOUBLE,np.float64),(TP.FLOAT16,np.float16),(TP.INT32,np.int32)]:
            N=33; D=N if per else N-1; i=np.arange(N)
            y=(a0-a1*np.cos(2*np.pi*i/D)+a2*np.cos(4*np.pi*i/D)).astype(npdt)
            case(f'{op}_{per}_{dt}',[h.make_node(op,['n'],['y'],periodic=per,output_datatype=dt)],[],[vi('y',dt,[N])],[],[y],[nh.from_array(np.array(N,np.int64),'n')])
# mel: other params, runtime sample rate and edges, double output
def mel(M,dft,sr,lo,hi):
    nsb=dft//2+1; fb=np.arange(0,M+2)
    lm=2595*np.log10(1+lo/700); hm=2595*np.log10(1+hi/700); st=(hm-lm)/fb.shape[0]
    fb=fb*st+lm; fb=700*(np.power(10,fb/2595)-1); fb=((dft+1)*fb)//sr; fb=fb.astype(int)
    out=np.zeros((nsb,M))
    for i in range(M):
        l,c,r=fb[i],fb[i+1],fb[i+2]
        if c-l==0: out[c,i]=1
        else:
            for j in range(l,c+1): out[j,i]=(j-l)/(c-l)
        if r-c>0:
            for j in range(c,r): out[j,i]=(r-j)/(r-c)
    return out
M,dft,sr,lo,hi=20,512,16000,np.float32(100.),np.float32(7600.)
inits=[nh.from_array(np.array(M,np.int64),'M'),nh.from_array(np.array(dft,np.int64),'dft')]
case('mel_double',[h.make_node('MelWeightMatrix',['M','dft','sr','lo','hi'],['y'],output_datatype=TP.DOUBLE)],
     [vi('sr',TP.INT64,[]),vi('lo',TP.FLOAT,[]),vi('hi',TP.FLOAT,[])],[vi('y',TP.DOUBLE,[dft//2+1,M])],
     [np.array(sr,np.int64),lo,hi],[mel(M,dft,sr,np.float64(lo),np.float64(hi))],inits)
