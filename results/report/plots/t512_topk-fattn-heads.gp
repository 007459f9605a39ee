# F-Attn per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot t512_topk-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_topk-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 't512_topk' offset 0,2
set cbrange [0:1]
set cblabel 'F-Attn (share of attention on position 0)'
set palette defined (0 '#440154', 1 '#472d7b', 2 '#3b528b', 3 '#2c728e', 4 '#21918c', 5 '#28ae80', 6 '#5ec962', 7 '#addc30', 8 '#fde725')
set xlabel 'query head (one panel per row)'
set ylabel 'layer'
set ytics 1
set xtics () scale 0
set tmargin 5
set xtics add ('0' 0)
set xtics add ('1' 1)
set xtics add ('2' 2)
set xtics add ('3' 3)
set label 1 'dense' at 1.5, graph 1.03 center
set xtics add ('0' 5)
set xtics add ('1' 6)
set xtics add ('2' 7)
set xtics add ('3' 8)
set label 2 'dense-G1' at 6.5, graph 1.08 center
set xtics add ('0' 10)
set xtics add ('1' 11)
set xtics add ('2' 12)
set xtics add ('3' 13)
set label 3 'topk64' at 11.5, graph 1.03 center
set xtics add ('0' 15)
set xtics add ('1' 16)
set xtics add ('2' 17)
set xtics add ('3' 18)
set label 4 'topk64-G1' at 16.5, graph 1.08 center
set xtics add ('0' 20)
set xtics add ('1' 21)
set xtics add ('2' 22)
set xtics add ('3' 23)
set label 5 'topk32' at 21.5, graph 1.03 center
set xtics add ('0' 25)
set xtics add ('1' 26)
set xtics add ('2' 27)
set xtics add ('3' 28)
set label 6 'topk32-G1' at 26.5, graph 1.08 center
set xtics add ('0' 30)
set xtics add ('1' 31)
set xtics add ('2' 32)
set xtics add ('3' 33)
set label 7 'topk64-G1-headwise' at 31.5, graph 1.03 center
set xtics add ('0' 35)
set xtics add ('1' 36)
set xtics add ('2' 37)
set xtics add ('3' 38)
set label 8 'window64' at 36.5, graph 1.08 center
set xtics add ('0' 40)
set xtics add ('1' 41)
set xtics add ('2' 42)
set xtics add ('3' 43)
set label 9 'random64' at 41.5, graph 1.03 center
set xtics add ('0' 45)
set xtics add ('1' 46)
set xtics add ('2' 47)
set xtics add ('3' 48)
set label 10 'oracle64' at 46.5, graph 1.08 center
set xrange [-0.5:48.5]
set yrange [-0.5:3.5]
plot 't512_topk-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     't512_topk-fattn-heads.dat' index 1 matrix using ($1+5):2:3 with image, \
     't512_topk-fattn-heads.dat' index 2 matrix using ($1+10):2:3 with image, \
     't512_topk-fattn-heads.dat' index 3 matrix using ($1+15):2:3 with image, \
     't512_topk-fattn-heads.dat' index 4 matrix using ($1+20):2:3 with image, \
     't512_topk-fattn-heads.dat' index 5 matrix using ($1+25):2:3 with image, \
     't512_topk-fattn-heads.dat' index 6 matrix using ($1+30):2:3 with image, \
     't512_topk-fattn-heads.dat' index 7 matrix using ($1+35):2:3 with image, \
     't512_topk-fattn-heads.dat' index 8 matrix using ($1+40):2:3 with image, \
     't512_topk-fattn-heads.dat' index 9 matrix using ($1+45):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 't512_topk-fattn-heads.png'
replot
set output
