# F-Attn per layer and query head, last step, mean over seeds; one panel per row
# written by `gated report`; run `gnuplot t512_mla-fattn-heads.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 't512_mla-fattn-heads.svg'
set grid
set key below
unset grid
unset key
set title 't512_mla' offset 0,2
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
set label 1 'MHA' at 1.5, graph 1.03 center
set xtics add ('0' 5)
set xtics add ('1' 6)
set xtics add ('2' 7)
set xtics add ('3' 8)
set label 2 'MLA' at 6.5, graph 1.08 center
set xtics add ('0' 10)
set xtics add ('1' 11)
set xtics add ('2' 12)
set xtics add ('3' 13)
set label 3 'MLA-G1' at 11.5, graph 1.03 center
set xtics add ('0' 15)
set xtics add ('1' 16)
set xtics add ('2' 17)
set xtics add ('3' 18)
set label 4 'MQA' at 16.5, graph 1.08 center
set xtics add ('0' 20)
set xtics add ('1' 21)
set xtics add ('2' 22)
set xtics add ('3' 23)
set label 5 'MLA-noR' at 21.5, graph 1.03 center
set xtics add ('0' 25)
set xtics add ('1' 26)
set xtics add ('2' 27)
set xtics add ('3' 28)
set label 6 'MLA-G1-headwise' at 26.5, graph 1.08 center
set xtics add ('0' 30)
set xtics add ('1' 31)
set xtics add ('2' 32)
set xtics add ('3' 33)
set label 7 'MHA-G1' at 31.5, graph 1.03 center
set xrange [-0.5:33.5]
set yrange [-0.5:3.5]
plot 't512_mla-fattn-heads.dat' index 0 matrix using ($1+0):2:3 with image, \
     't512_mla-fattn-heads.dat' index 1 matrix using ($1+5):2:3 with image, \
     't512_mla-fattn-heads.dat' index 2 matrix using ($1+10):2:3 with image, \
     't512_mla-fattn-heads.dat' index 3 matrix using ($1+15):2:3 with image, \
     't512_mla-fattn-heads.dat' index 4 matrix using ($1+20):2:3 with image, \
     't512_mla-fattn-heads.dat' index 5 matrix using ($1+25):2:3 with image, \
     't512_mla-fattn-heads.dat' index 6 matrix using ($1+30):2:3 with image
set terminal pngcairo size 960,560 noenhanced
set output 't512_mla-fattn-heads.png'
replot
set output
